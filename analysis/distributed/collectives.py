"""Collectives across the ranks of a job: each rank's collective calls, matched into instances.

Per rank (:func:`rank_collectives`, run where the rank's events are): one row per collective
call, from the communication kernels :func:`~profview.analysis.trace.communication.classify_communication` finds (their
collective arguments filled from the ``record_param_comms`` operator of the same external id when
the kernel lacks them), or, for a rank without any, from its CPU collectives (``gloo:*`` ranges).

Across ranks (:func:`match_collectives`), a call is one instance of a collective with the calls
of the other ranks that share its key, and only on what the trace holds (``match`` says which):

0. ``peer``: a point-to-point call that names its peer (Kineto writes a send's ``Dst Rank`` and a
   recv's ``Src Rank``, global ranks): the n-th send from rank A to rank B in a process group is
   B's n-th recv from A there, matched only where both sides are in the job and name each other
   (one side alone: ``peer_unseen``);
1. ``seq``: ``(process group, Seq)``; ``comms_id``: ``Comms Id`` (a hash of the two);
2. ``group_order`` / ``stream_order``: the n-th blocking collective of a process group (or of the
   n-th communication stream; host collectives: the n-th call), only where every rank that has
   calls there issued the same collectives in the same order (a profiling window that opens one
   collective later on one rank shows as a disagreement, and then nothing there is matched).

Left unmatched (``ranks`` 1, ``wait_us`` null) and counted by :func:`match_counts`:
point-to-point calls (Send, Recv, SendRecv) whose peer is not known (no ``Src Rank``/``Dst Rank``,
and not a two-rank process group with its ``Seq``: a SendRecv kernel's name gives no peer), calls
of a rank that is not a member of the process group it names, calls whose order disagrees across
ranks (``order differs``), and instances that would make a rank wait longer than its own call
lasted (``implausible``: a blocking call cannot end before the last rank arrives, so the pairing
is wrong).

Clocks: each rank's offset is the median, over matched blocking GPU instances that all ranks of
the job join, of (its end − the instance's median end), taken relative to the lowest rank; it is
subtracted before waits are measured (CPU collectives anchor nothing: their ranges do not end
together); it is estimated again once implausible instances are left out.  ``wait_us`` of a call
is the latest (corrected) start of its instance minus its own: the time it waited for the last
rank to arrive.  A rank whose name, dtype or size disagrees with the instance's most common value
(a tie: the lowest rank's) is flagged (``mismatch``), and still kept.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from ..trace.communication import CPU_COLLECTIVE, collective_type

#: Per-rank calls (what a worker returns), times in absolute µs of that rank's clock.
RANK_CALL_SCHEMA: pl.Schema = pl.Schema(
    {
        "name": pl.String(),
        "backend": pl.String(),
        "process_group": pl.String(),
        "seq": pl.Int64(),
        "comms_id": pl.Int64(),
        "stream": pl.Int64(),
        "start": pl.Float64(),
        "end": pl.Float64(),
        "dtype": pl.String(),
        "bytes": pl.Int64(),
        "group_size": pl.Int64(),
        "group_ranks": pl.String(),
        "src_rank": pl.Int64(),
        "dst_rank": pl.Int64(),
    }
)
#: The collectives view: one row per (instance, rank).
COLLECTIVE_COLUMNS: tuple[str, ...] = (
    "collective",
    "name",
    "process_group",
    "rank",
    "start_us",
    "duration_us",
    "wait_us",
    "bytes",
    "algbw_gbps",
    "busbw_gbps",
    "dtype",
    "ranks",
    "last",
    "mismatch",
    "match",
    "anchor",
)
COLLECTIVE_SCHEMA: pl.Schema = pl.Schema(
    {
        "collective": pl.Int64(),
        "name": pl.String(),
        "process_group": pl.String(),
        "rank": pl.Int64(),
        "start_us": pl.Float64(),
        "duration_us": pl.Float64(),
        "wait_us": pl.Float64(),
        "bytes": pl.Int64(),
        "algbw_gbps": pl.Float64(),
        "busbw_gbps": pl.Float64(),
        "dtype": pl.String(),
        "ranks": pl.Int64(),
        "last": pl.Boolean(),
        "mismatch": pl.Boolean(),
        "match": pl.String(),
        "anchor": pl.Boolean(),
    }
)
assert tuple(COLLECTIVE_SCHEMA) == COLLECTIVE_COLUMNS
#: Collective arguments copied from ``record_param_comms`` onto its kernels where missing.
ARG_FIELDS = (
    "dtype", "in_nelems", "out_nelems", "group_size", "process_group", "process_group_ranks", "seq", "comms_id",
    "src_rank", "dst_rank",
)  # fmt: skip
#: Bytes per element of Kineto's ``dtype`` names (and gloo's ``Input type``).
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "bfloat16": 2,
    "c10::half": 2, "c10::bfloat16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2,
    "char": 1, "int8": 1, "byte": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip
#: Types that do not block every member (their ends are not a clock anchor).
NON_BLOCKING = ("Send", "Recv")
#: Point-to-point types: matched only where the peer is known (see the module doc).
POINT_TO_POINT = ("Send", "Recv", "SendRecv")
#: What ``match`` says of a call left unmatched, by reason.
UNMATCHED = {
    "no_peer": "point-to-point without a known peer",
    "peer_unseen": "point-to-point whose peer's call is not in the job",
    "not_member": "rank not a member of its process group",
    "order_differs": "order differs across ranks (no sequence number)",
    "implausible": "a wait longer than the waiting rank's call",
}
#: How much longer than its own call a rank's wait may be (µs: timestamps are rounded to 1 µs).
WAIT_TOLERANCE_US = 1.0
#: CPU collectives: each rank's range ends when its own part is done, not with the others' (on
#: samples/gloo_2rank, two ranks of one host, they would say 0.94 ms of skew), so no clock anchor.
HOST_BACKENDS = ("gloo", "mpi")


def _elem_bytes(dtype: pl.Expr) -> pl.Expr:
    return dtype.str.to_lowercase().replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)


def rank_collectives(events: pl.DataFrame, comm: pl.DataFrame) -> pl.DataFrame:
    """One rank's collective calls (:data:`RANK_CALL_SCHEMA`), by start.

    ``comm``: GPU work classified by :func:`~profview.analysis.trace.communication.classify_communication`, with the
    collective-argument columns of the events frame and ``external_id``.
    """
    kernels = comm.filter(pl.col("backend").is_not_null())
    if kernels.height:
        params = (
            events.filter((pl.col("name") == "record_param_comms") & pl.col("external_id").is_not_null())
            .select("external_id", *[pl.col(c).alias(f"_{c}") for c in ARG_FIELDS])
            .unique("external_id", keep="first")
        )
        kernels = kernels.join(params, on="external_id", how="left").with_columns(
            pl.coalesce(c, f"_{c}").alias(c) for c in ARG_FIELDS
        )
        elems = pl.max_horizontal("in_nelems", "out_nelems")
        calls = kernels.select(
            pl.coalesce("collective_name", pl.lit("?")).alias("name"),
            "backend",
            "process_group",
            "seq",
            "comms_id",
            "stream",
            pl.col("ts").alias("start"),
            "end",
            "dtype",
            (elems * _elem_bytes(pl.col("dtype"))).alias("bytes"),
            "group_size",
            pl.col("process_group_ranks").alias("group_ranks"),
            "src_rank",
            "dst_rank",
        )
    else:
        calls = _host_calls(events)
    return calls.cast(RANK_CALL_SCHEMA).select(list(RANK_CALL_SCHEMA)).sort("start", maintain_order=True)


def _host_calls(events: pl.DataFrame) -> pl.DataFrame:
    """CPU collectives (``gloo:all_reduce`` ...): name, start, end, dtype and bytes of the input."""
    work = events.filter(
        (pl.col("ph") == "X") & pl.col("dur").is_not_null() & pl.col("name").str.contains(CPU_COLLECTIVE)
    )
    names = work["name"].to_list()
    sizes = [
        _input_bytes(d, t) for d, t in zip(work["input_dims"].to_list(), work["input_type"].to_list(), strict=False)
    ]
    return pl.DataFrame(
        {
            "name": [collective_type(n.split(":", 1)[1]) or "?" for n in names],
            "backend": [n.split(":", 1)[0] for n in names],
            "process_group": None,
            "seq": None,
            "comms_id": None,
            "stream": None,
            "start": work["ts"],
            "end": work["ts"] + work["dur"],
            "dtype": [_first_type(t) for t in work["input_type"].to_list()],
            "bytes": sizes,
            "group_size": None,
            "group_ranks": None,
            "src_rank": None,
            "dst_rank": None,
        },
        schema=RANK_CALL_SCHEMA,
    )


def _first_type(types: str | None) -> str | None:
    try:
        parsed = json.loads(types) if types else None
    except ValueError:
        return None
    return parsed[0] if isinstance(parsed, list) and parsed and isinstance(parsed[0], str) and parsed[0] else None


def _input_bytes(dims: str | None, types: str | None) -> int | None:
    """Bytes of the first input (``Input Dims`` [[n, m]] × the size of ``Input type``), if known."""
    try:
        shape = json.loads(dims)[0] if dims else None
    except (ValueError, IndexError, TypeError):
        return None
    size = DTYPE_BYTES.get((_first_type(types) or "").lower())
    if not isinstance(shape, list) or not shape or size is None or not all(isinstance(n, int) for n in shape):
        return None
    return int(np.prod(shape)) * size


def _members(group_ranks: str | None) -> list[int] | None:
    """The ranks ``Process Group Ranks`` lists (``[0, 1]``), or None where it is absent or unreadable."""
    try:
        parsed = json.loads(group_ranks) if group_ranks else None
    except ValueError:
        return None
    if not isinstance(parsed, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in parsed):
        return None
    return parsed


def match_keys(calls: pl.DataFrame, rank: int | None = None) -> pl.DataFrame:
    """``calls`` of one rank (``rank``: its global rank) with ``match`` (what it was matched on,
    or why not: a key of :data:`UNMATCHED`) and ``key`` (shared across ranks; null: unmatched)."""
    ranked = calls.with_columns(pl.lit(rank, dtype=pl.Int64).alias("rank"))
    return stacked_match_keys(ranked).drop("rank")


def stacked_match_keys(calls: pl.DataFrame) -> pl.DataFrame:
    """:func:`match_keys` of every rank at once: ``calls`` holds the calls of many ranks with a
    ``rank`` column (each rank's rows together); each rank's rows come back sorted by ``start``, as
    :func:`match_keys` gives them, its ordinals counted within the rank.  One frame for the whole
    job, so a job of 10,000 ranks is matched without a frame per rank."""
    calls = _with_call_columns(calls).sort("rank", "start", maintain_order=True)
    members: dict[str | None, list[int] | None] = {}
    outside, pair = [], []
    for group, rank in zip(calls["group_ranks"].to_list(), calls["rank"].to_list(), strict=True):
        if group not in members:
            members[group] = _members(group)
        found = members[group]
        outside.append(rank is not None and found is not None and rank not in found)
        pair.append(found is not None and len(found) == 2)
    calls = calls.with_columns(
        pl.Series("_outside", outside, dtype=pl.Boolean),
        ((pl.col("group_size") == 2).fill_null(False) | pl.Series(pair, dtype=pl.Boolean)).alias("_pair"),
        pl.col("name").is_in(POINT_TO_POINT).alias("_p2p"),
    )
    # The peer a point-to-point call names (a send its Dst Rank, a recv its Src Rank): the channel
    # sender -> receiver, whose n-th send is the receiver's n-th recv from that sender (NCCL keeps
    # the order of the point-to-point calls between two ranks).
    me = pl.col("rank")  # each row's own rank: the frame holds many
    names_dst = (pl.col("dst_rank").is_not_null() & (pl.col("dst_rank") != me)).fill_null(False)
    names_src = (pl.col("src_rank").is_not_null() & (pl.col("src_rank") != me)).fill_null(False)
    peer = pl.col("_p2p") & (names_dst ^ names_src) & me.is_not_null()
    sender = pl.when(names_dst).then(me).otherwise(pl.col("src_rank"))
    receiver = pl.when(names_dst).then(pl.col("dst_rank")).otherwise(me)
    calls = calls.with_columns(
        peer.alias("_peer"),
        pl.format("{}->{}", sender, receiver).alias("_channel"),
    )
    by_channel = pl.int_range(pl.len()).over("rank", "_peer", "process_group", "_channel")
    has_id = pl.col("seq").is_not_null() | pl.col("comms_id").is_not_null()
    # ordinals count the blocking collectives only: a point-to-point call between other ranks
    # would shift them
    ordinal = ~pl.col("_outside") & ~pl.col("_p2p") & ~has_id
    calls = calls.with_columns(ordinal.alias("_ordinal"))
    stream_no = pl.col("stream").rank("dense").over("rank", "_ordinal").cast(pl.Int64)
    by_pg = pl.int_range(pl.len()).over("rank", "_ordinal", "process_group")
    by_stream = pl.int_range(pl.len()).over("rank", "_ordinal", "stream")
    match = (
        pl.when(pl.col("_outside"))
        .then(pl.lit("not_member"))
        .when(pl.col("_peer"))
        .then(pl.lit("peer"))
        .when(pl.col("_p2p") & ~(pl.col("_pair") & has_id))
        .then(pl.lit("no_peer"))
        .when(pl.col("seq").is_not_null())
        .then(pl.lit("seq"))
        .when(pl.col("comms_id").is_not_null())
        .then(pl.lit("comms_id"))
        .when(pl.col("process_group").is_not_null())
        .then(pl.lit("group_order"))
        .otherwise(pl.lit("stream_order"))
    )
    key = (
        pl.when(pl.col("match") == "peer")
        .then(pl.format("pg {}/p2p {}/#{}", pl.col("process_group").fill_null("?"), pl.col("_channel"), by_channel))
        .when(pl.col("match") == "seq")
        .then(pl.format("pg {}/seq {}", pl.col("process_group").fill_null("?"), pl.col("seq")))
        .when(pl.col("match") == "comms_id")
        .then(pl.format("id {}", pl.col("comms_id")))
        .when(pl.col("match") == "group_order")
        .then(pl.format("pg {}/#{}", pl.col("process_group"), by_pg))
        .when(pl.col("match") == "stream_order")
        .then(pl.format("stream {}/#{}", stream_no.fill_null(0), by_stream))
    )
    space = (
        pl.when(pl.col("match") == "group_order")
        .then(pl.format("pg {}", pl.col("process_group")))
        .when(pl.col("match") == "stream_order")
        .then(pl.format("stream {}", stream_no.fill_null(0)))
    )
    return (
        calls.with_columns(match.alias("match"))
        .with_columns(key.alias("key"), space.alias("_space"))
        .drop("_outside", "_pair", "_p2p", "_ordinal", "_peer", "_channel")
    )


def _with_call_columns(calls: pl.DataFrame) -> pl.DataFrame:
    """``calls`` with every column of :data:`RANK_CALL_SCHEMA` (a summary saved before one was
    added lacks it: null)."""
    missing = [pl.lit(None, dtype=dtype).alias(c) for c, dtype in RANK_CALL_SCHEMA.items() if c not in calls.columns]
    return calls.with_columns(missing) if missing else calls


def _agreeing_order(calls: pl.DataFrame) -> pl.DataFrame:
    """Ordinal matches kept only where every rank that has calls in a process group (or stream)
    issued the same names in the same order there; the others become ``order_differs``."""
    ordinal = calls.filter(pl.col("_space").is_not_null())
    if ordinal.height == 0:
        return calls
    sequences = (
        ordinal.sort("start", maintain_order=True)
        .group_by("_space", "rank")
        .agg(pl.col("name").str.join("|").alias("_names"))
        .group_by("_space")
        .agg(pl.col("_names").n_unique().alias("_orders"))
    )
    differs = sequences.filter(pl.col("_orders") > 1)["_space"].implode()
    unmatched = pl.col("_space").is_in(differs).fill_null(False)
    return calls.with_columns(
        pl.when(unmatched).then(pl.lit("order_differs")).otherwise(pl.col("match")).alias("match"),
        pl.when(unmatched).then(None).otherwise(pl.col("key")).alias("key"),
    )


def _seen_peers(calls: pl.DataFrame) -> pl.DataFrame:
    """Peer matches kept only where both sides are in the job: a send that names its receiver and
    that receiver's recv that names the sender (the same channel and place in it); a call whose
    other side is missing (a rank not loaded, a window that cut it off) becomes ``peer_unseen``."""
    alone = (pl.col("match") == "peer") & (pl.col("rank").n_unique().over("key") < 2)
    return calls.with_columns(
        pl.when(alone).then(pl.lit("peer_unseen")).otherwise(pl.col("match")).alias("match"),
        pl.when(alone).then(None).otherwise(pl.col("key")).alias("key"),
    )


def clock_offsets(calls: pl.DataFrame, ranks: list[int]) -> dict[int, float]:
    """Each rank's clock offset in µs (see the module doc); 0 where nothing anchors it."""
    offsets = {r: 0.0 for r in ranks}
    if len(ranks) < 2 or calls.height == 0:
        return offsets
    full = _anchors(calls, len(ranks))
    if full.height == 0:
        return offsets
    per_rank = (
        full.with_columns((pl.col("end") - pl.col("end").median().over("key")).alias("d"))
        .group_by("rank")
        .agg(pl.col("d").median())
    )
    found = dict(zip(per_rank["rank"].to_list(), per_rank["d"].to_list(), strict=False))
    base = found.get(min(ranks), 0.0)
    return {r: round(float(found.get(r, base) - base), 3) for r in ranks}


def _anchors(calls: pl.DataFrame, n_ranks: int) -> pl.DataFrame:
    """The calls of matched blocking GPU instances that all ``n_ranks`` ranks join (clock anchors)."""
    return calls.filter(
        pl.col("key").is_not_null()
        & (pl.len().over("key") == n_ranks)
        & (pl.col("rank").n_unique().over("key") == n_ranks)
        & ~pl.col("name").is_in(NON_BLOCKING)
        & ~pl.col("backend").is_in(HOST_BACKENDS).fill_null(False)
    )


def _implausible(calls: pl.DataFrame, offsets: dict[int, float]) -> pl.DataFrame:
    """Matched instances where, on clocks corrected by ``offsets``, a rank would wait longer than
    its own call lasted: those calls become ``implausible`` (unmatched)."""
    shift = pl.col("rank").replace_strict(offsets, return_dtype=pl.Float64)
    start = pl.col("start") - shift
    wait = start.max().over("key") - start
    too_long = (wait > (pl.col("end") - pl.col("start")) + WAIT_TOLERANCE_US).any().over("key")
    bad = pl.col("key").is_not_null() & too_long.fill_null(False)
    return calls.with_columns(
        pl.when(bad).then(pl.lit("implausible")).otherwise(pl.col("match")).alias("match"),
        pl.when(bad).then(None).otherwise(pl.col("key")).alias("key"),
    )


def match_counts(view: pl.DataFrame) -> dict[str, int]:
    """Calls of the collectives view by ``match``: how many were matched on what, and how many
    were left unmatched and why (the keys of :data:`UNMATCHED`)."""
    if view.height == 0 or "match" not in view.columns:
        return {}
    counts = view.group_by("match").agg(pl.len()).sort("match")
    return {str(m): int(n) for m, n in counts.iter_rows()}


def anchor_count(view: pl.DataFrame) -> int:
    """How many instances of the collectives view anchor the clock offsets (``anchor``)."""
    if view.height == 0 or "anchor" not in view.columns:
        return 0
    return int(view.filter(pl.col("anchor"))["collective"].n_unique())


def _busbw_factor(name: pl.Expr, n: pl.Expr) -> pl.Expr:
    """nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for gathers and scatters."""
    n = n.cast(pl.Float64)
    return (
        pl.when(name == "AllReduce")
        .then(2 * (n - 1) / n)
        .when(name.is_in(["AllGather", "ReduceScatter", "AllToAll"]))
        .then((n - 1) / n)
        .otherwise(1.0)
    )


def match_collectives(
    per_rank: dict[int, pl.DataFrame], origin: float = 0.0, one_clock: bool = False
) -> tuple[pl.DataFrame, dict[int, float]]:
    """The collectives view (:data:`COLLECTIVE_COLUMNS`) and each rank's clock offset.

    ``per_rank``: :func:`rank_collectives` of each rank; ``origin``: the job's start (µs, on the
    lowest rank's clock), which ``start_us`` counts from; ``one_clock``: every rank's times were
    taken on one clock (the processes of one Nsight Systems capture), so no offset is estimated.
    """
    frames = [_with_call_columns(f).with_columns(pl.lit(r, dtype=pl.Int64).alias("rank")) for r, f in per_rank.items()]
    stacked = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(schema=_STACKED_SCHEMA)
    return match_stacked(stacked, sorted(per_rank), origin, one_clock)


_STACKED_SCHEMA = pl.Schema({**RANK_CALL_SCHEMA, "rank": pl.Int64()})


def match_stacked(
    stacked: pl.DataFrame, ranks: list[int], origin: float = 0.0, one_clock: bool = False
) -> tuple[pl.DataFrame, dict[int, float]]:
    """:func:`match_collectives` of every rank's calls in one frame: ``stacked`` holds the
    :func:`rank_collectives` rows of every rank with a ``rank`` column; ``ranks``: every rank of
    the job (those without calls included); ``one_clock``: no offset is estimated (all 0)."""
    calls = stacked_match_keys(stacked) if stacked.height else pl.DataFrame(schema=_STACKED_SCHEMA)

    def offsets_of(found: pl.DataFrame) -> dict[int, float]:
        return {r: 0.0 for r in ranks} if one_clock else clock_offsets(found, ranks)

    if calls.height == 0:
        return pl.DataFrame(schema=COLLECTIVE_SCHEMA), offsets_of(calls)
    calls = _seen_peers(_agreeing_order(calls))
    offsets = offsets_of(calls)
    checked = _implausible(calls, offsets)
    if not checked["match"].equals(calls["match"]):  # the offsets again, without the wrong pairings
        calls = checked
        offsets = offsets_of(calls)
        calls = _implausible(calls, offsets)
    anchors = _anchors(calls, len(ranks))["key"].unique().implode()
    # an unmatched call is an instance of its own
    calls = calls.with_columns(pl.col("key").is_in(anchors).fill_null(False).alias("anchor")).with_columns(
        pl.coalesce("key", pl.format("rank {}/#{}", pl.col("rank"), pl.int_range(pl.len()).over("rank"))).alias("key")
    )
    shift = pl.col("rank").replace_strict(offsets, return_dtype=pl.Float64)
    calls = calls.with_columns((pl.col("start") - shift).alias("start"), (pl.col("end") - shift).alias("end"))
    # a send and the recv it pairs with are one transfer: the same kind for the name check
    kind = pl.when(pl.col("name").is_in(NON_BLOCKING)).then(pl.lit("Send/Recv")).otherwise(pl.col("name"))
    signature = pl.concat_str(
        [kind, pl.col("dtype").fill_null(""), pl.col("bytes").cast(pl.String).fill_null("")], separator="|"
    )
    n_ranks = pl.col("rank").n_unique().over("key")
    calls = calls.with_columns(
        signature.alias("_sig"),
        n_ranks.alias("ranks"),
        pl.col("start").min().over("key").alias("_first"),
        pl.col("start").max().over("key").alias("_last"),
    )
    # The instance's signature: the most common one; a tie goes to the lowest rank's.
    usual = (
        calls.group_by("key", "_sig")
        .agg(pl.len().alias("_n"), pl.col("rank").min().alias("_low"))
        .sort(["key", "_n", "_low"], descending=[False, True, False])
        .unique("key", keep="first")
        .select("key", pl.col("_sig").alias("_usual"))
    )
    calls = calls.join(usual, on="key", how="left").with_columns(
        (pl.col("_sig") != pl.col("_usual")).alias("mismatch"),
        pl.when(pl.col("ranks") > 1).then(pl.col("_last") - pl.col("start")).alias("wait_us"),
        ((pl.col("start") == pl.col("_last")) & (pl.col("ranks") > 1)).alias("last"),
    )
    order = calls.group_by("key").agg(pl.col("_first").first()).sort(["_first", "key"])
    ids = dict(zip(order["key"].to_list(), range(order.height), strict=False))
    duration = pl.col("end") - pl.col("start")
    algbw = pl.when(duration > 0).then(pl.col("bytes") / duration / 1e3)
    n = pl.coalesce("group_size", "ranks")
    view = calls.with_columns(
        pl.col("key").replace_strict(ids, return_dtype=pl.Int64).alias("collective"),
        (pl.col("start") - origin).round(3).alias("start_us"),
        duration.round(3).alias("duration_us"),
        pl.col("wait_us").round(3),
        algbw.round(3).alias("algbw_gbps"),
        (algbw * _busbw_factor(pl.col("name"), n)).round(3).alias("busbw_gbps"),
    )
    return view.select(COLLECTIVE_COLUMNS).cast(COLLECTIVE_SCHEMA).sort(["collective", "rank"]), offsets


#: One row per matched collective (:func:`collective_instances`).
INSTANCE_COLUMNS: tuple[str, ...] = (
    "collective",
    "name",
    "bytes",
    "ranks",
    "last_rank",
    "max_wait_us",
    "waiting_rank",
    "skew_us",
    "duration_us",
    "busbw_gbps",
    "process_group",
    "dtype",
    "mismatches",
)


def collective_instances(view: pl.DataFrame) -> pl.DataFrame:
    """The collectives view (one row per instance and rank) as one row per instance matched across
    at least two ranks, longest wait first: ``collective`` (its id), ``name`` (its kind), ``bytes``
    (the instance's most common size: the last rank's), ``ranks``, ``last_rank`` (who arrived last:
    the one the others waited for), ``max_wait_us`` (the longest wait) and ``waiting_rank`` (whose),
    ``skew_us`` (last start − first start), ``duration_us`` (the longest call), ``busbw_gbps`` (at
    the last rank, whose call is the transfer without waiting), ``mismatches`` (ranks whose name,
    dtype or size differ)."""
    matched = view.filter(pl.col("ranks") > 1)
    if not matched.height:
        return pl.DataFrame(
            schema={c: matched.schema.get(c, pl.Int64) for c in INSTANCE_COLUMNS}
            | {
                "last_rank": pl.Int64,
                "max_wait_us": pl.Float64,
                "waiting_rank": pl.Int64,
                "skew_us": pl.Float64,
                "mismatches": pl.Int64,
            }
        )
    last = pl.col("last") & ~pl.col("mismatch")
    frame = matched.group_by("collective").agg(
        # the names that agree (a point-to-point instance: its send and its recv, "Recv/Send")
        pl.col("name").filter(~pl.col("mismatch")).unique().sort().str.join("/"),
        pl.col("bytes").filter(last).first(),
        pl.col("ranks").first(),
        pl.col("rank").filter(pl.col("last")).min().alias("last_rank"),
        pl.col("wait_us").max().alias("max_wait_us"),
        pl.col("rank").sort_by(["wait_us", "rank"], descending=[True, False]).first().alias("waiting_rank"),
        (pl.col("start_us").max() - pl.col("start_us").min()).round(3).alias("skew_us"),
        pl.col("duration_us").max(),
        pl.col("busbw_gbps").filter(pl.col("last")).first(),
        pl.col("process_group").first(),
        pl.col("dtype").filter(~pl.col("mismatch")).first(),
        pl.col("mismatch").sum().cast(pl.Int64).alias("mismatches"),
    )
    return frame.sort(["max_wait_us", "collective"], descending=[True, False]).select(INSTANCE_COLUMNS)
