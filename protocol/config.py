"""The coordinator's configuration: Kafka's broker config keys, dots turned to underscores.

Defaults are Kafka 4.x's. ``GroupConfig`` holds the dynamic per-group overrides that live in
the controller (seed 000: configs are kept outside the group, settable before it exists and
kept after it is deleted); the shard only reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from assignors import SERVER_ASSIGNORS
from assignors.connect import DEFAULT_MAX_DELAY_MS
from assignors.connect import NAME as CONNECT_ASSIGNOR
from assignors.share import NAME as SHARE_ASSIGNOR

# The server-side assignors a Connect group may name (seed 004: "ServerAssignor must be
# supported by the server"): the incremental cooperative one, run by the coordinator.
CONNECT_SERVER_ASSIGNORS: tuple[str, ...] = (CONNECT_ASSIGNOR,)

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class CoordinatorConfig:
    # KIP-848 consumer groups
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    # Cohort's own (not a Kafka key): the interval returned to a member with a step waiting
    # (partitions pending another member's revocation, a revocation to acknowledge, a
    # client-side assignment to compute), never below group_consumer_min_heartbeat_interval_ms
    # nor above the group's interval. Set it to the heartbeat interval to turn it off.
    group_consumer_reconciliation_heartbeat_interval_ms: int = 50
    group_consumer_max_size: int = INT32_MAX
    # KIP-1263 (Kafka 4.3+): a group's target is computed at most once per interval; a bump
    # within it waits for the first heartbeat after it (``consumer.target_assignment``). 0
    # computes in the turn that bumps.
    group_consumer_assignment_interval_ms: int = 1_000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    # The first is the default server assignor.
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # Classic groups
    group_max_size: int = INT32_MAX
    group_initial_rebalance_delay_ms: int = 3_000
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    # Online migration between the protocols: disabled | upgrade | downgrade | bidirectional.
    group_consumer_migration_policy: str = "bidirectional"
    # Connect worker groups (seed 004). Kafka never shipped them; the keys follow its
    # group.<type>.* pattern and the defaults are Kafka Connect's (session.timeout.ms 10 s,
    # heartbeat.interval.ms 3 s, scheduled.rebalance.max.delay.ms 5 min).
    group_connect_session_timeout_ms: int = 10_000
    group_connect_heartbeat_interval_ms: int = 3_000
    group_connect_max_size: int = INT32_MAX
    # The first is the default server assignor.
    group_connect_assignors: tuple[str, ...] = CONNECT_SERVER_ASSIGNORS
    # How long the coordinator's connect assignor holds a departed worker's work for its
    # return (Connect's scheduled.rebalance.max.delay.ms; 0: reassigned at once).
    group_connect_scheduled_rebalance_max_delay_ms: int = DEFAULT_MAX_DELAY_MS
    # Online migration of classic Connect groups (protocol type "connect") to the connect
    # group type and back; Cohort's key beside group_consumer_migration_policy, same values.
    group_connect_migration_policy: str = "bidirectional"
    # Share groups (KIP-932, Kafka 4.2's group.share.* keys and defaults).
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_max_size: int = 200
    # KIP-1263, as for consumer groups (``group_consumer_assignment_interval_ms``).
    group_share_assignment_interval_ms: int = 1_000
    group_share_min_assignment_interval_ms: int = 0
    group_share_max_assignment_interval_ms: int = 15_000
    group_share_assignors: tuple[str, ...] = (SHARE_ASSIGNOR,)
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2_000
    # Cohort's broker-wide default of the group config share.auto.offset.reset (Kafka's
    # default, latest): where a share-partition read for the first time starts.
    group_share_auto_offset_reset: str = "latest"
    # Offsets
    # Streams groups (KIP-1071, Kafka 4.4's group.streams.* keys and defaults).
    group_streams_session_timeout_ms: int = 45_000
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5_000
    group_streams_min_heartbeat_interval_ms: int = 5_000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_num_standby_replicas: int = 0
    group_streams_max_standby_replicas: int = 2
    group_streams_initial_rebalance_delay_ms: int = 3_000
    group_streams_max_size: int = INT32_MAX
    # KIP-1263, as for consumer groups (Kafka 4.4's group.streams.*assignment.interval.ms): a
    # bumped group's target waits for a heartbeat after the interval, told ASSIGNMENT_DELAYED.
    group_streams_assignment_interval_ms: int = 1_000
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15_000
    # The client tags standbys are spread over (an assignment config when set; a v1 member
    # lacking one is told MISSING_CLIENT_TAGS), the lag a warm-up may have to count as caught
    # up, and how often members report their task offsets.
    group_streams_rack_aware_assignment_tags: tuple[str, ...] = ()
    group_streams_acceptable_recovery_lag: int = 10_000
    group_streams_task_offset_interval_ms: int = 60_000
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    # Cohort's own bound: how many rebalance causes a group remembers.
    group_rebalance_history_max: int = 32

    def __post_init__(self) -> None:
        if not self.group_consumer_assignors:
            raise ValueError("group_consumer_assignors needs at least one assignor")
        unknown = set(self.group_consumer_assignors) - set(SERVER_ASSIGNORS)
        if unknown:
            raise ValueError(f"unknown server assignors {sorted(unknown)}")
        if not self.group_connect_assignors:
            raise ValueError("group_connect_assignors needs at least one assignor")
        unknown = set(self.group_connect_assignors) - set(CONNECT_SERVER_ASSIGNORS)
        if unknown:
            raise ValueError(f"unknown connect server assignors {sorted(unknown)}")
        if self.group_connect_scheduled_rebalance_max_delay_ms < 0:
            raise ValueError("group_connect_scheduled_rebalance_max_delay_ms must be >= 0")
        if self.group_connect_heartbeat_interval_ms >= self.group_connect_session_timeout_ms:
            raise ValueError("the connect heartbeat interval must be below its session timeout")
        if (
            self.group_max_size < 1
            or self.group_consumer_max_size < 1
            or self.group_connect_max_size < 1
        ):
            raise ValueError("group sizes must be at least 1 (Kafka's lower bound)")
        for key in ("group_consumer_migration_policy", "group_connect_migration_policy"):
            if getattr(self, key) not in ("disabled", "upgrade", "downgrade", "bidirectional"):
                raise ValueError(f"unknown {key} {getattr(self, key)!r}")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("the heartbeat interval must be below the session timeout")
        if self.group_consumer_reconciliation_heartbeat_interval_ms < 1:
            raise ValueError("the reconciliation heartbeat interval must be positive")
        for kind in ("consumer", "share", "streams"):  # Kafka's: 0 <= min <= it <= max
            low, it, high = (getattr(self, f"group_{kind}_{b}assignment_interval_ms")
                             for b in ("min_", "", "max_"))
            if not 0 <= low <= it <= high:
                raise ValueError(f"group_{kind}_assignment_interval_ms must be within [min, "
                                 "max] and not negative")
        self._check_share()

    def _check_share(self) -> None:
        """Kafka's bounds on the group.share.* keys (ShareGroupConfig, GroupCoordinatorConfig)."""
        if tuple(self.group_share_assignors) != (SHARE_ASSIGNOR,):
            raise ValueError(f"group_share_assignors takes exactly one: {SHARE_ASSIGNOR!r}")
        if not 1 <= self.group_share_max_size <= 1000:
            raise ValueError("group_share_max_size must be within [1, 1000]")
        if not 2 <= self.group_share_delivery_count_limit <= 10:
            raise ValueError("group_share_delivery_count_limit must be within [2, 10]")
        if not 100 <= self.group_share_partition_max_record_locks <= 10_000:
            raise ValueError("group_share_partition_max_record_locks must be within [100, 10000]")
        for what in ("session_timeout_ms", "heartbeat_interval_ms", "record_lock_duration_ms"):
            lo, value, hi = (getattr(self, f"group_share_{k}") for k in
                             (f"min_{what}", what, f"max_{what}"))
            if not 0 < lo <= value <= hi:
                raise ValueError(f"group_share_{what} must be within [min, max] and positive")
        if self.group_share_auto_offset_reset not in ("latest", "earliest"):
            raise ValueError("group_share_auto_offset_reset must be latest or earliest")
        if self.group_share_heartbeat_interval_ms >= self.group_share_session_timeout_ms:
            raise ValueError("the share heartbeat interval must be below its session timeout")

    @property
    def default_server_assignor(self) -> str:
        return self.group_consumer_assignors[0]

    @property
    def default_connect_assignor(self) -> str:
        return self.group_connect_assignors[0]

    @property
    def default_share_assignor(self) -> str:
        return self.group_share_assignors[0]


@dataclass(frozen=True)
class GroupConfig:
    """Dynamic overrides for one group; ``None`` means "use the broker default"."""

    consumer_session_timeout_ms: int | None = None
    consumer_heartbeat_interval_ms: int | None = None
    # A Connect group's scheduled.rebalance.max.delay.ms (Cohort's group config key
    # ``connect.scheduled.rebalance.max.delay.ms``).
    connect_scheduled_rebalance_max_delay_ms: int | None = None
    # A share group's share.session.timeout.ms, share.heartbeat.interval.ms,
    # share.record.lock.duration.ms, share.delivery.count.limit and share.auto.offset.reset
    # (latest | earliest: where a share-partition read for the first time starts).
    share_session_timeout_ms: int | None = None
    share_heartbeat_interval_ms: int | None = None
    share_record_lock_duration_ms: int | None = None
    share_delivery_count_limit: int | None = None
    share_auto_offset_reset: str | None = None
    streams_session_timeout_ms: int | None = None
    streams_heartbeat_interval_ms: int | None = None
    streams_num_standby_replicas: int | None = None
    streams_initial_rebalance_delay_ms: int | None = None
    # KIP-1263's consumer.assignment.interval.ms. Last: the controller stores a config as its
    # fields in declaration order, and an older, shorter one still loads.
    consumer_assignment_interval_ms: int | None = None
    share_assignment_interval_ms: int | None = None  # KIP-1263's share.assignment.interval.ms
    streams_assignment_interval_ms: int | None = None  # and streams.assignment.interval.ms

    def __post_init__(self) -> None:
        if self.share_auto_offset_reset not in (None, "latest", "earliest"):
            raise ValueError(
                f"share.auto.offset.reset must be latest or earliest, "
                f"not {self.share_auto_offset_reset!r}"
            )

    def share_setting(self, broker: CoordinatorConfig, name: str) -> int:
        """A share group's ``share_<name>``: its override when set, else the broker's
        ``group.share.<name>``."""
        override = getattr(self, f"share_{name}")
        return override if override is not None else getattr(broker, f"group_share_{name}")

    def share_bounds(self, broker: CoordinatorConfig) -> list[tuple[int | None, str, int, int]]:
        """(value, Kafka name, low, high) of each int share config: Kafka's ShareGroupConfig
        bounds, which the controller checks before it keeps a group config."""
        b = broker
        return [
            (self.share_session_timeout_ms, "share.session.timeout.ms",
             b.group_share_min_session_timeout_ms, b.group_share_max_session_timeout_ms),
            (self.share_heartbeat_interval_ms, "share.heartbeat.interval.ms",
             b.group_share_min_heartbeat_interval_ms, b.group_share_max_heartbeat_interval_ms),
            (self.share_record_lock_duration_ms, "share.record.lock.duration.ms",
             b.group_share_min_record_lock_duration_ms, b.group_share_max_record_lock_duration_ms),
            (self.share_delivery_count_limit, "share.delivery.count.limit", 2, 10),
            (self.share_assignment_interval_ms, "share.assignment.interval.ms",
             b.group_share_min_assignment_interval_ms, b.group_share_max_assignment_interval_ms),
        ]

    def type_bounds(self, broker: CoordinatorConfig) -> list[tuple[int | None, str, int, int]]:
        """(value, Kafka name, low, high) of each int config of the share and streams types:
        Kafka's GroupConfig bounds, which the controller checks before it keeps a config."""
        b = broker
        return [
            *self.share_bounds(broker),
            (self.streams_session_timeout_ms, "streams.session.timeout.ms",
             b.group_streams_min_session_timeout_ms, b.group_streams_max_session_timeout_ms),
            (self.streams_heartbeat_interval_ms, "streams.heartbeat.interval.ms",
             b.group_streams_min_heartbeat_interval_ms,
             b.group_streams_max_heartbeat_interval_ms),
            (self.streams_num_standby_replicas, "streams.num.standby.replicas", 0,
             b.group_streams_max_standby_replicas),
            (self.streams_initial_rebalance_delay_ms, "streams.initial.rebalance.delay.ms", 0,
             INT32_MAX),
            (self.streams_assignment_interval_ms, "streams.assignment.interval.ms",
             b.group_streams_min_assignment_interval_ms,
             b.group_streams_max_assignment_interval_ms),
        ]

    def share_starts_at_earliest(self, broker: CoordinatorConfig) -> bool:
        reset = self.share_auto_offset_reset or broker.group_share_auto_offset_reset
        return reset == "earliest"

    def effective_session_timeout_ms(self, broker: CoordinatorConfig) -> int:
        """The group's session timeout: its override when set (any value, 0 included, since
        only ``None`` means unset), else the broker's ``group.consumer.session.timeout.ms``."""
        override = self.consumer_session_timeout_ms
        return override if override is not None else broker.group_consumer_session_timeout_ms

    def effective_heartbeat_interval_ms(self, broker: CoordinatorConfig) -> int:
        """The group's heartbeat interval, by the same rule as the session timeout."""
        override = self.consumer_heartbeat_interval_ms
        return override if override is not None else broker.group_consumer_heartbeat_interval_ms

    def effective_assignment_interval_ms(self, broker: CoordinatorConfig) -> int:
        """The group's KIP-1263 assignment interval, by the same rule (Kafka's
        ``consumerGroupAssignmentIntervalMs``: the group config over the broker's)."""
        override = self.consumer_assignment_interval_ms
        if override is not None:
            return override
        return broker.group_consumer_assignment_interval_ms

    def effective_scheduled_rebalance_max_delay_ms(self, broker: CoordinatorConfig) -> int:
        """A Connect group's scheduled rebalance delay, by the same rule."""
        override = self.connect_scheduled_rebalance_max_delay_ms
        if override is not None:
            return override
        return broker.group_connect_scheduled_rebalance_max_delay_ms

    def reconciliation_heartbeat_interval_ms(self, broker: CoordinatorConfig) -> int:
        """The interval for a member with a step waiting: the broker's short interval, floored
        at ``group_consumer_min_heartbeat_interval_ms`` and never above the group's own."""
        short = max(
            broker.group_consumer_reconciliation_heartbeat_interval_ms,
            broker.group_consumer_min_heartbeat_interval_ms,
        )
        return min(short, self.effective_heartbeat_interval_ms(broker))
