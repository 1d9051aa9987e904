"""Every id served over OpenEnv (``ragen-bench serve``), and the Gymnasium views of a served chat.

* :mod:`.session`: one client's episodes, played through the chat layer as ``ragen-bench eval``
  plays them (no serving library);
* :mod:`.gym_env`: ``RAGEN/Chat-v0`` (a session in-process) and ``RAGEN/Remote-v0`` (a session on a
  server), the same Gymnasium env on either side of the wire;
* :mod:`.server`: the OpenEnv app (``openenv``'s own ``create_app``) and ``serve``;
* :mod:`.client`: the OpenEnv client of that server.

Only :mod:`.server` and :mod:`.client` import ``openenv`` (the ``openenv`` extra; importing its
server loads gradio and fastmcp, seconds): ``RAGEN/Remote-v0`` imports the client when it is made.
"""
