"""The output directory's record of a match: ``match.json`` (what the match is),
``journal.jsonl`` (one line per finished game, the only source of truth when resuming) and
``games.ggf`` (rebuilt from the journal)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine_server.log import get_logger

from .config import MatchConfig, MatchError
from .record import GameRecord

# The name these events had before the tournament module was split: log filters select on it.
log = get_logger("match.tournament")


class Journal:
    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.path = self.dir / "journal.jsonl"
        self.ggf_path = self.dir / "games.ggf"

    def load(self) -> list[GameRecord]:
        """Finished games in journal order.  A line cut short by a kill is dropped (and cut from
        the file, so the next append starts on a fresh line); a key seen twice counts once; a
        whole line that is not a game record is skipped with a warning (its game is played
        again)."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        records: list[GameRecord] = []
        seen: set[str] = set()
        good_end = 0
        pos = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            line = data[pos:nl]
            pos = nl + 1
            try:
                raw = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                log.warning("journal_bad_line", path=str(self.path), offset=pos)
                continue
            good_end = pos
            try:
                rec = GameRecord.from_dict(raw)
            except (ValueError, TypeError, AttributeError) as e:
                log.warning("journal_bad_record", path=str(self.path), offset=pos, error=str(e))
                continue
            if rec.key in seen:
                continue
            seen.add(rec.key)
            records.append(rec)
        if good_end < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
        return records

    def append(self, record: GameRecord) -> None:
        line = json.dumps(record.to_dict(), separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        with open(self.ggf_path, "a", encoding="utf-8") as f:
            f.write(record.ggf + "\n")

    def rebuild_ggf(self, records: list[GameRecord]) -> None:
        tmp = self.ggf_path.with_suffix(".ggf.tmp")
        tmp.write_text("".join(r.ggf + "\n" for r in records), encoding="utf-8")
        tmp.replace(self.ggf_path)


def prepare_dir(config: MatchConfig) -> Journal:
    """Create the output directory, or check that the one there holds this same match."""
    config.out.mkdir(parents=True, exist_ok=True)
    ident = config.identity()
    meta = config.out / "match.json"
    if meta.exists():
        old = json.loads(meta.read_text())
        if old.get("identity") != ident:
            raise MatchError(f"{config.out} holds a different match ({meta}); give another --out "
                             "or the same arguments as before")
    else:
        meta.write_text(json.dumps({"identity": ident}, indent=2) + "\n")
    return Journal(config.out)
