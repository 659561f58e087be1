/// Adds to a `Progress`'s unit counts from any thread, every addition counted.
///
/// Used by `OperationQueue.progress` and a group's `progress`.
///
/// - Note: On Darwin, Foundation's `+=` reads and then writes, so the counter adds under a
///   lock of its own, and the progress's observers are told under it (never under the
///   owner's state lock). Elsewhere our `Progress` adds under its own lock and tells its
///   observers after it.
package struct ProgressCounter: ~Copyable, Sendable {
    /// The unit count an addition goes to.
    package enum UnitCount: Sendable {
        case completed
        case total
    }

    #if canImport(ObjectiveC)
    private let lock = Locked(())
    #endif

    package init() {}

    /// Adds `units` to `count` of `progress`.
    package func add(_ units: Int64, to count: UnitCount, of progress: Progress) {
        #if canImport(ObjectiveC)
        lock.withLock { _ in
            switch count {
            case .completed: progress.completedUnitCount += units
            case .total: progress.totalUnitCount += units
            }
        }
        #else
        switch count {
        case .completed: progress._incrementCompletedUnitCount(by: units)
        case .total: progress._incrementTotalUnitCount(by: units)
        }
        #endif
    }
}
