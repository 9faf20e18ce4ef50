"""The survey engine: a worker per target (``worker``), its finishing process, the warm server workers fork
from (``server``), scheduling and time-outs (``survey``), what a kind body says (``launcher_messages``)."""
