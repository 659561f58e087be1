// When a worker's leases end, as far as the worker knows, and when it must stop its bodies.
#if Durable

/// The worker's view of its leases: the store renewed them no earlier than the start of the
/// last heartbeat that was answered. Bodies are stopped a heartbeat interval before the
/// leases may end, so that a rescue elsewhere does not run an attempt beside them.
struct LeaseKeeping {
    let lease: Duration
    let heartbeatInterval: Duration
    /// The start of the last answered heartbeat.
    private(set) var renewedAt: ContinuousClock.Instant

    init(lease: Duration, heartbeatInterval: Duration, renewedAt: ContinuousClock.Instant) {
        self.lease = lease
        self.heartbeatInterval = heartbeatInterval
        self.renewedAt = renewedAt
    }

    /// When the bodies must have been stopped if no heartbeat is answered before.
    var stopBodiesAt: ContinuousClock.Instant { renewedAt + lease - heartbeatInterval }

    /// How long a heartbeat begun at `now` may wait for its answer: until the bodies must be
    /// stopped; once that has passed (they are stopped), as long as a lease less an interval.
    func callDeadline(at now: ContinuousClock.Instant) -> Duration {
        now < stopBodiesAt ? stopBodiesAt - now : lease - heartbeatInterval
    }

    /// Whether bodies started before the last renewal must be stopped at `now`.
    func mustStopBodies(at now: ContinuousClock.Instant) -> Bool { now >= stopBodiesAt }

    /// A heartbeat begun at `start` was answered.
    mutating func renewed(at start: ContinuousClock.Instant) {
        renewedAt = max(renewedAt, start)
    }
}
#endif
