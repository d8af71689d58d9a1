"""Differential conformance against Apache Kafka 4.4 (a package, so its modules, ``requests``
among them, never shadow the libraries of that name on ``sys.path``)."""
