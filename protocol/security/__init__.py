"""Security rules, pure: ACL bindings and Kafka's authorization decision (``acls``), SCRAM-SHA-256
credentials and the server side of its exchange (``scram``), SASL/PLAIN (``plain``). Their
durable state (bindings, users) lives in the controller; the gateway applies them."""
