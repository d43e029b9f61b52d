"""``fluss table ...`` and ``fluss database ...``: what Kafka's topic and console tools do, for Fluss tables.

    fluss database list | create NAME | drop NAME
    fluss table list [DATABASE] | describe DB.TABLE [--json]
    fluss table create DB.TABLE --schema "id BIGINT NOT NULL, name STRING" [--primary-key id] [--buckets 3] ...
    fluss table drop DB.TABLE
    fluss table scan DB.TABLE [--from-beginning] [--partition P] [--columns a,b] [--format table|json|csv]
    fluss table produce DB.TABLE < rows.jsonl          (one JSON object per line)

``scan`` is a console consumer: from the end of each bucket (new rows only) or ``--from-beginning``, until
``--max-rows`` rows or ``--timeout-ms`` without a new row (by default it runs until Ctrl-C); a primary-key
table's changelog shows each change's type (+I, -U, +U, -D). ``produce`` is a console producer: it appends
(log table) or upserts (primary-key table) each line; keys missing from a line are null; text is converted
to the column type (ISO dates and times, decimals); it stops at the first line that cannot be written, naming
the line, after writing the lines before it.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import decimal
import json
import sys
from typing import Any

from fluss.cli.common import HelpFormatter, add_bootstrap, client_properties, progress, run_client, table_path

FORMATS = ("table", "json", "csv")


def add_parsers(sub) -> None:
    d = sub.add_parser("database", help="list, create or drop databases", description=__doc__,
                       formatter_class=HelpFormatter)
    d.add_argument("action", choices=["list", "create", "drop"], help="what to do")
    d.add_argument("name", nargs="?", default=None, help="create/drop: the database")
    d.add_argument("--if-not-exists", action="store_true", help="create: no error if it exists")
    d.add_argument("--if-exists", action="store_true", help="drop: no error if it does not exist")
    d.add_argument("--restrict", action="store_true", help="drop: refuse when the database still has tables")
    add_bootstrap(d)
    d.set_defaults(run=run_database)

    t = sub.add_parser("table", help="list, describe, create, drop, scan (consume) or produce to tables",
                       description=__doc__, formatter_class=HelpFormatter)
    t.add_argument("action", choices=["list", "describe", "create", "drop", "scan", "produce"], help="what to do")
    t.add_argument("name", nargs="?", default=None,
                   help="list: a database (default: all); others: DATABASE.TABLE")
    add_bootstrap(t)
    t.add_argument("--json", action="store_true",
                   help="describe: one JSON object (definition; per bucket leader, replicas, ISR, offsets)")
    g = t.add_argument_group("create")
    g.add_argument("--schema", default=None, metavar="'COL TYPE [NOT NULL], ...'",
                   help="columns with Fluss/Flink SQL types, e.g. 'id BIGINT NOT NULL, name STRING'")
    g.add_argument("--primary-key", default=None, metavar="COL[,COL]", help="primary key (a primary-key table)")
    g.add_argument("--partition-by", default=None, metavar="COL[,COL]", help="partition keys")
    g.add_argument("--buckets", type=int, default=None, help="bucket.num (default: the server's)")
    g.add_argument("--bucket-key", default=None, metavar="COL[,COL]", help="bucket.key")
    g.add_argument("--property", "-p", action="append", default=None, metavar="KEY=VALUE",
                   help="a table property, e.g. table.datalake.enabled=true (repeatable)")
    g.add_argument("--if-not-exists", action="store_true", help="no error if the table exists")
    g2 = t.add_argument_group("drop")
    g2.add_argument("--if-exists", action="store_true", help="no error if the table does not exist")
    s = t.add_argument_group("scan (a console consumer)")
    s.add_argument("--from-beginning", action="store_true",
                   help="start at the earliest row of each bucket (default: only rows written from now on)")
    s.add_argument("--partition", action="append", default=None, metavar="NAME",
                   help="only this partition (repeatable; default: every partition)")
    s.add_argument("--columns", default=None, metavar="COL[,COL]", help="only these columns (projection)")
    s.add_argument("--format", choices=FORMATS, default="table", help="output format (json: one object a line)")
    s.add_argument("--max-rows", "--max-messages", type=int, default=None, help="stop after this many rows")
    s.add_argument("--timeout-ms", type=int, default=None,
                   help="stop when no row arrives for this long (default: run until Ctrl-C)")
    s.add_argument("--output", "-o", default=None, metavar="FILE", help="write rows to FILE instead of stdout")
    p = t.add_argument_group("produce (a console producer)")
    p.add_argument("--input", "-i", default=None, metavar="FILE", help="JSON lines file (default: stdin)")
    p.add_argument("--batch-rows", type=int, default=1000, help="lines written per batch")
    t.set_defaults(run=run_table)


# ---------------------------------------------------------------- databases


def run_database(args: argparse.Namespace) -> int:
    if args.action != "list" and not args.name:
        raise SystemExit(f"error: fluss database {args.action} needs a database name")

    async def work(conn) -> int:
        admin = conn.get_admin()
        if args.action == "list":
            for name in sorted(await admin.list_databases()):
                print(name)
        elif args.action == "create":
            await admin.create_database(args.name, ignore_if_exists=args.if_not_exists)
            print(f"Created database {args.name}")
        else:
            await admin.drop_database(args.name, ignore_if_not_exists=args.if_exists, cascade=not args.restrict)
            print(f"Dropped database {args.name}")
        return 0

    return run_client(client_properties(args), work)


# ---------------------------------------------------------------- tables


def run_table(args: argparse.Namespace) -> int:
    if args.action == "list":
        return run_client(client_properties(args), lambda conn: _list(conn, args.name))
    if not args.name:
        raise SystemExit(f"error: fluss table {args.action} needs DATABASE.TABLE")
    path = table_path(args.name)
    action = {"describe": _describe, "create": _create, "drop": _drop, "scan": _scan, "produce": _produce}
    return run_client(client_properties(args), lambda conn: action[args.action](conn, path, args))


async def _list(conn, database: str | None) -> int:
    from fluss.table_report import table_names

    for name in await table_names(conn, database):
        print(name)
    return 0


async def _describe(conn, path, args) -> int:
    from fluss.table_report import describe_table, describe_table_json

    if args.json:
        print(json.dumps(await describe_table_json(conn, path), indent=2))
        return 0
    with progress() as bar:  # a big table: every bucket's offsets and sizes are asked for (a spinner on a tty)
        bar.add_task(f"describing {path}", total=None)
        text = await describe_table(conn, path)
    print(text)
    return 0


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def parse_columns(text: str):
    """``"id BIGINT NOT NULL, price DECIMAL(10, 2)"`` as Columns (commas inside parentheses stay)."""
    from fluss.types import Column

    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        current.append(ch)
    parts.append("".join(current))
    columns = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        name, _, type_text = part.partition(" ")
        if not type_text.strip():
            raise SystemExit(f"error: column {part!r} needs a type, e.g. '{part} STRING'")
        columns.append(Column(name.strip("`"), type_text.strip()))
    if not columns:
        raise SystemExit("error: --schema needs at least one column")
    return columns


async def _create(conn, path, args) -> int:
    import fluss
    from fluss.cli.common import parse_overrides
    from fluss.types import RowSchema

    if not args.schema:
        raise SystemExit("error: fluss table create needs --schema 'col TYPE, ...'")
    row_schema = RowSchema(parse_columns(args.schema), _names(args.primary_key))
    properties = parse_overrides(args.property)
    descriptor = fluss.TableDescriptor(fluss.Schema.of(row_schema), partition_keys=_names(args.partition_by) or None,
                                       bucket_count=args.buckets, bucket_keys=_names(args.bucket_key) or None,
                                       properties=properties)
    await conn.get_admin().create_table(path, descriptor, ignore_if_exists=args.if_not_exists)
    kind = "primary-key table" if row_schema.primary_keys else "log table"
    print(f"Created {kind} {path}")
    return 0


async def _drop(conn, path, args) -> int:
    await conn.get_admin().drop_table(path, ignore_if_not_exists=args.if_exists)
    print(f"Dropped table {path}")
    return 0


# ---------------------------------------------------------------- scan: a console consumer


async def _scan(conn, path, args) -> int:
    import fluss

    table = await conn.get_table(path)
    info = table.get_table_info()
    scan = table.new_scan()
    columns = _names(args.columns)
    if columns:
        scan = scan.project_by_name(columns)
    scanner = await scan.create_log_scanner()
    admin = conn.get_admin()
    buckets = list(range(info.num_buckets))
    spec = fluss.OffsetSpec.earliest() if args.from_beginning else fluss.OffsetSpec.latest()
    if info.get_partition_keys():
        infos = await admin.list_partition_infos(path)
        partitions = {p.partition_name: p.partition_id for p in infos}
        counts = {p.partition_name: p.bucket_count or info.num_buckets for p in infos}  # each partition's own
        wanted = args.partition or list(partitions)
        missing = [p for p in wanted if p not in partitions]
        if missing:
            raise SystemExit(f"error: table {path} has no partition {missing[0]!r} (partitions: "
                             f"{', '.join(partitions) or 'none'})")
        offsets = {}
        for name in wanted:
            start = await admin.list_partition_offsets(path, name, list(range(counts[name])), spec)
            offsets.update({(partitions[name], b): o for b, o in start.items()})
        scanner.subscribe_partition_buckets(offsets)
    else:
        if args.partition:
            raise SystemExit(f"error: table {path} is not partitioned")
        scanner.subscribe_buckets(await admin.list_offsets(path, buckets, spec))
    out = open(args.output, "w", encoding="utf-8", newline="") if args.output else sys.stdout
    sink = _RowSink(args.format, out, with_change_type=info.has_primary_key())
    loop = asyncio.get_running_loop()
    idle_since = loop.time()
    shown = 0
    try:
        with progress(transient=False, description="rows") as bar:
            task = bar.add_task(f"scanning {path} into {args.output}", total=None) if args.output else None
            while args.max_rows is None or shown < args.max_rows:
                records = await scanner.poll(500)
                batch = list(records)
                if args.max_rows is not None:
                    batch = batch[: args.max_rows - shown]
                if batch:
                    sink.write(batch)
                    shown += len(batch)
                    idle_since = loop.time()
                    if task is not None:
                        bar.update(task, completed=shown)
                elif args.timeout_ms is not None and (loop.time() - idle_since) * 1000 >= args.timeout_ms:
                    break
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    finally:
        sink.close()
        if args.output:
            out.close()
    print(f"{shown} row(s)", file=sys.stderr)
    return 0


class _RowSink:
    """Prints scan records as a table, JSON lines or CSV."""

    def __init__(self, fmt: str, out, with_change_type: bool) -> None:
        self.fmt = fmt
        self.out = out
        self.with_change_type = with_change_type
        self._csv = None
        self._first = True

    def _rows(self, records) -> list[dict]:
        rows = []
        for r in records:
            row = dict(r.row)
            if self.with_change_type:
                row = {"_change_type": r.change_type.short_string(), **row}
            rows.append(row)
        return rows

    def write(self, records) -> None:
        rows = self._rows(records)
        if self.fmt == "json":
            for row in rows:
                self.out.write(json.dumps(row, default=_json_value, ensure_ascii=False) + "\n")
        elif self.fmt == "csv":
            if self._csv is None:
                self._csv = csv.DictWriter(self.out, fieldnames=list(rows[0]))
                self._csv.writeheader()
            self._csv.writerows({k: _text(v, null="") for k, v in row.items()} for row in rows)
        else:
            from rich.console import Console
            from rich.table import Table

            table = Table(show_header=self._first, box=None, pad_edge=False)
            for name in rows[0]:
                table.add_column(name)
            for row in rows:
                table.add_row(*(_text(v) for v in row.values()))
            Console(file=self.out, soft_wrap=True).print(table)
        self._first = False
        self.out.flush()

    def close(self) -> None:
        self.out.flush()


def _text(value: Any, null: str = "NULL") -> str:
    if value is None:
        return null
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _json_value(value: Any):
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


# ---------------------------------------------------------------- produce: a console producer


async def _produce(conn, path, args) -> int:
    table = await conn.get_table(path)
    info = table.get_table_info()
    schema = info.row_schema
    writer = table.new_upsert().create_writer() if info.has_primary_key() else table.new_append().create_writer()
    write = writer.upsert_arrow_batch if info.has_primary_key() else writer.write_arrow_batch
    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    written = 0
    failure: str | None = None
    try:
        with progress(description="rows") as bar:
            task = bar.add_task(f"writing to {path}", total=None)
            pending: list[tuple[int, dict]] = []
            for line_no, line in enumerate(source, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    failure = f"line {line_no}: not JSON ({e.msg})"
                    break
                if not isinstance(row, dict):
                    failure = f"line {line_no}: expected a JSON object, got {type(row).__name__}"
                    break
                pending.append((line_no, row))
                if len(pending) >= args.batch_rows:
                    n, failure = _write_lines(write, schema, pending)
                    written += n
                    pending = []
                    bar.update(task, completed=written)
                    if failure:
                        break
            if pending and failure is None:
                n, failure = _write_lines(write, schema, pending)
                written += n
            await writer.flush()
    finally:
        if args.input:
            source.close()
    print(f"Wrote {written} row(s) to {path}", file=sys.stderr)
    if failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    return 0


def _write_lines(write, schema, lines: list[tuple[int, dict]]) -> tuple[int, str | None]:
    """Writes the rows of some input lines; on a bad line writes those before it. Returns (rows written, error)."""
    from fluss.errors import FlussError

    try:
        write(json_rows_to_batch([row for _, row in lines], schema))
        return len(lines), None
    except FlussError:
        pass
    for i, (line_no, row) in enumerate(lines):  # find the first bad line
        try:
            json_rows_to_batch([row], schema)
        except FlussError as e:
            if i:
                write(json_rows_to_batch([r for _, r in lines[:i]], schema))
            return i, f"line {line_no}: {e.message}"
    return 0, "the rows could not be written"


def json_rows_to_batch(rows: list[dict], schema):
    """Rows parsed from JSON as a record batch of ``schema``: missing keys are null, text is cast to temporal,
    decimal and binary columns, unknown keys are refused."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from fluss.errors import ErrorCode, FlussError
    from fluss.row_convert import conform_batch

    names = schema.column_names
    known = set(names)
    for row in rows:
        unknown = [k for k in row if k not in known]
        if unknown:
            raise FlussError(f"unknown column '{unknown[0]}' (columns: {', '.join(names)})", ErrorCode.CLIENT_ERROR)
    arrays = []
    for col in schema.columns:
        values = [row.get(col.name) for row in rows]
        target = col.data_type.to_arrow()
        try:
            array = pa.array(values, type=target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as first:
            try:
                text = pa.array([None if v is None else str(v) for v in values], pa.string())
                if pa.types.is_binary(target) or pa.types.is_fixed_size_binary(target):
                    text = pc.cast(text, pa.binary())
                array = pc.cast(text, target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                raise FlussError(f"column '{col.name}' ({col.data_type}): {first or e}",
                                 ErrorCode.CLIENT_ERROR) from None
        arrays.append(array)
    batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema([pa.field(c.name, a.type) for c, a in
                                                                  zip(schema.columns, arrays, strict=True)]))
    return conform_batch(batch, schema)
