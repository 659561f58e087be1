// When a worker must stop a body whose lease it could not renew.
#if Durable

/// A worker's arithmetic of leases. Each running body's lease was last renewed no earlier than
/// its *renewal*: the start of its claim call, then the start of each answered heartbeat that
/// named it. A body is stopped a heartbeat interval before its lease may end, so that a rescue
/// elsewhere does not run an attempt beside it.
struct LeaseKeeping {
    let lease: Duration
    let heartbeatInterval: Duration

    /// When a body renewed at `renewal` must have been stopped.
    func stopAt(renewedAt renewal: ContinuousClock.Instant) -> ContinuousClock.Instant {
        renewal + lease - heartbeatInterval
    }

    /// How long a heartbeat begun at `now` may wait for its answer: until the earliest stop of
    /// a body still running (the loop must be back by then to stop it); with none, a lease
    /// less an interval.
    func callDeadline(at now: ContinuousClock.Instant, earliestStop: ContinuousClock.Instant?) -> Duration {
        guard let earliestStop else { return lease - heartbeatInterval }
        return max(earliestStop - now, .milliseconds(1))
    }

    /// How long to sleep after a round ended at `now`: an interval, or less when a body must
    /// be stopped sooner.
    func pause(at now: ContinuousClock.Instant, earliestStop: ContinuousClock.Instant?) -> Duration {
        guard let earliestStop else { return heartbeatInterval }
        return max(.zero, min(heartbeatInterval, earliestStop - now))
    }
}
#endif
