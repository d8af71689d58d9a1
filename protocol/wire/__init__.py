"""Kafka's wire protocol, translated to and from Cohort's messages: pure, no sockets.

``framing`` splits a byte stream into frames, ``codec`` turns a frame into plain values and
back (kio does the bytes, ``entities`` the types; the hot group APIs are coded by hand,
exact to kio: ``fast_requests``, ``fast_responses`` over ``primitives``; ``array_guard``
checks a body before kio reads it), ``versions`` is what ApiVersions reports
and the codec admits (read off the one API table, ``protocol.api``), and one module per API
family translates plain Kafka messages into Cohort's requests and Cohort's replies into plain
Kafka responses (each group API's row in ``protocol.api`` names its two halves). The gateway
actor (``actors/gateway``) owns the sockets, the waiting and the routing; everything it
decides by rule lives here.
"""
