"""The wire formats, shared by the engine and its clients as equals.

Every format a line or a message of this project is written in lives here, I/O-free, with
no numba and no import of ``engine_server`` or ``clients`` (``tests/test_layers.py``):

* :mod:`.notation`: squares, moves and boards (64-character strings, GGF ``BO``, CS303 and
  Botzone forms).
* :mod:`.text`: cleaning an input line (control characters, GTP comments).
* :mod:`.ggf`: GGF game records, move items and time controls.
* :mod:`.gtp`: GTP commands (tokenising) and responses (writing and reading).
* :mod:`.nboard`: NBoard lines the engine writes and its clients read (``===``, ``search``,
  ``book``, ``nodestats``, ``status``, ``set game``).
* :mod:`.zmq`: ZeroMQ frames (``[line]`` and ``[seq, line]``).
* :mod:`.web`: the web page's JSON messages.

The engine's command handlers (``engine_server.commands``) and the clients (referee, remote
client, judges) both import these modules; a line the server writes parses back with the same
module the referee reads it with (``tests/test_protocol_formats.py``).
"""
