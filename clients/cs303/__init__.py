"""SUSTech CS303 "Reversed Reversi" adapter: the ``AI`` class, its backends and a local checker
modelled on the course's usability test (``othello-cs303 check FILE.py``)."""
