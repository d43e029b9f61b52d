"""Security of the servers: who is calling (authentication per listener), over what (TLS), and what they may do
(ACLs).

* ``fluss.rpc.jaas`` - the JAAS-style option text (``... PlainLoginModule required user_alice="..." ;``).
* :mod:`.settings` - the security options of one server (``security.protocol.map``, ``security.sasl.*``,
  ``internal.listener.name``, ``authorizer.enabled``, ``super.users``, ``security.ssl.*``), read once and checked
  at start-up.
* ``fluss.rpc.tls`` - TLS material from PEM files (server and channel credentials), handshake-failure messages.
* :mod:`.self_signed` - a throw-away CA for tests and ``LocalCluster(tls=True)``.
* :mod:`.session` - the :class:`~.session.Session` of the request being handled (principal, listener, host).
* :mod:`.authentication` - the :class:`~.authentication.Authenticator` interceptor on every listener.
* ``fluss.acl`` - resources, operations, principals and ACL bindings (Fluss's model, shared with the client).
* :mod:`.authorizer` - the ACL cache kept in sync with ZooKeeper, and the allow/deny decision.
* :mod:`.access` - which operation on which resource each RPC needs; the :class:`~.access.AccessControl`
  interceptor that checks it.

``docs/security.md`` is the user's guide and records the design decisions.
"""
