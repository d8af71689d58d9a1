"""The pure share-group core under load: members of one share group fetching and
acknowledging a partition's records through the shard, each change one durable record.

Prints, in one run: records acquired and acknowledged per CPU second (fetch with the previous
batch's acknowledgements piggybacked, as a share consumer in implicit mode sends them) for a
few in-flight sizes; the bytes of share-partition state written per record delivered; and the
load of the resulting log (every record replayed, and the compacted log), which must rebuild
the same groups (checked). Pure: no Ray, no I/O but the codec.

    nice -n 10 .venv/bin/python bench/share_core.py [--records 200000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from protocol.share.messages import ACK_ACCEPT

GROUP, TOPIC = "bench-sg", "T-bench"


def run(records: int, members: int, batch: int) -> dict:
    shard = GroupCoordinatorShard(config=CoordinatorConfig(),
                                  metadata=MetadataImage([TopicMetadata(TOPIC, "bench", 1)]))
    shard.set_group_config(GROUP, GroupConfig(share_auto_offset_reset="earliest"))
    log = []
    for i in range(members):
        req = m.ShareGroupHeartbeatRequest(GROUP, f"m{i}", 0, subscribed_topic_names=["bench"])
        log += shard.handle(req).records
    held: dict[str, list[m.AcquiredRecords]] = {f"m{i}": [] for i in range(members)}
    delivered = state_bytes = 0
    start = time.process_time()
    while delivered < records:
        for mid in held:
            acks = [m.AcknowledgementBatch(a.first_offset, a.last_offset, [ACK_ACCEPT])
                    for a in held[mid]]
            part = m.ShareFetchPartition(0, acks, log_end_offset=records)
            result = shard.handle(m.ShareFetchRequest(GROUP, mid, [m.ShareFetchTopic(
                TOPIC, [part])], max_records=batch))
            got = result.response.topics[0].partitions[0]
            assert got.acknowledge_error_code == 0, got
            held[mid] = got.acquired
            delivered += sum(a.last_offset - a.first_offset + 1 for a in got.acquired)
            log += result.records
    cpu = time.process_time() - start
    encoded = [encode_record(r) for r in log]
    state_bytes = sum(len(b) for b, r in zip(encoded, log, strict=True)
                      if type(r.key).__name__ == "SharePartitionStateKey")
    start = time.process_time()
    fresh = GroupCoordinatorShard(config=shard.config, metadata=shard.image, now_ms=shard.now_ms)
    for blob in encoded:
        fresh.replay(decode_record(blob))
    replay_cpu = time.process_time() - start
    assert fresh.groups == shard.groups, "the log did not rebuild the same share group"
    return dict(delivered=delivered, cpu=cpu, records=len(log), state_bytes=state_bytes,
                replay_cpu=replay_cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    args = ap.parse_args()
    print(f"{'members':>7} {'batch':>5} {'delivered':>9} {'records/s CPU':>13} "
          f"{'log records':>11} {'state B/record':>14} {'replay s CPU':>12}")
    for members, batch in ((1, 500), (3, 500), (3, 100), (10, 200)):
        r = run(args.records, members, batch)
        print(f"{members:>7} {batch:>5} {r['delivered']:>9} {r['delivered'] / r['cpu']:>13,.0f} "
              f"{r['records']:>11} {r['state_bytes'] / r['delivered']:>14.2f} "
              f"{r['replay_cpu']:>12.3f}")


if __name__ == "__main__":
    main()
