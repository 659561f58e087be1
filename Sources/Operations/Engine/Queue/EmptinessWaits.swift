/// Who waits for a queue to become empty (`waitUntilAllOperationsAreFinished`), and the
/// operations that still count for them after leaving.
struct EmptinessWaits {
    /// Waiting for no member to be left.
    private var waiters: [QueueWaiter] = []
    /// Waiting for all but `remaining` members to leave (a wait from completion blocks of
    /// members, which leave only when their blocks return).
    private var waitersForAllBut: [(remaining: Int, waiter: QueueWaiter)] = []
    /// Operations that left and whose `isFinished` observers are being told: until they
    /// have been, the queue is not empty for its waits (a wait returns after the observers).
    private(set) var finishesBeingAnnounced = 0

    /// How many wait.
    var count: Int { waiters.count + waitersForAllBut.count }

    /// `waiter` waits until at most `remaining` operations count (0: the queue empty).
    mutating func add(_ waiter: QueueWaiter, allBut remaining: Int) {
        if remaining == 0 {
            waiters.append(waiter)
        } else {
            waitersForAllBut.append((remaining, waiter))
        }
    }

    /// A task that waited was cancelled: returns its hook, for the caller to drop after the lock.
    mutating func remove(id: UInt64) -> [QueueWaiter] {
        let removed = waiters.filter { $0.hasID(id) }
        waiters.removeAll { $0.hasID(id) }
        return removed
    }

    /// A member left whose observers are being told: it still counts.
    mutating func announcementBegan() {
        finishesBeingAnnounced += 1
    }

    /// The observers of a member that left were told.
    mutating func announcementEnded() {
        precondition(
            finishesBeingAnnounced > 0,
            "Operations: a queue was told a finish was announced (event: announcementEnded) while none was being announced")
        finishesBeingAnnounced -= 1
    }

    /// The waits that end now that `count` operations count for them.
    mutating func due(count: Int) -> [QueueWaiter] {
        var due: [QueueWaiter] = []
        if count == 0 {
            due = waiters
            waiters = []
        }
        if !waitersForAllBut.isEmpty {
            due += waitersForAllBut.lazy.filter { count <= $0.remaining }.map(\.waiter)
            waitersForAllBut.removeAll { count <= $0.remaining }
        }
        return due
    }
}
