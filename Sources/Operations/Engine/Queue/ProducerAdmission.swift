/// A queue's bound on unfinished operations that `enqueue` respects, and the producers
/// waiting for room under it. Part of `QueueCore`, under the queue's lock; `members` is the
/// queue's member count at each call.
struct ProducerAdmission {
    /// The bound; nil for none.
    private(set) var capacity: Int?
    /// Places promised to producers that `enqueue` woke and that have not added yet.
    private(set) var reservedPlaces = 0
    /// Producers suspended in `enqueue` until there is room, oldest first.
    private(set) var waiters: [QueueWaiter] = []

    /// Returns the producers the new capacity admits, oldest first.
    mutating func setCapacity(_ capacity: Int?, members: Int) -> [QueueWaiter] {
        self.capacity = capacity
        return producersToAdmit(members: members)
    }

    /// Whether a producer may add now: room under the capacity, and nobody waiting before
    /// it. Takes a place when it may.
    mutating func takePlace(members: Int) -> Bool {
        if let capacity {
            guard waiters.isEmpty, members + reservedPlaces < capacity else { return false }
        }
        reservedPlaces += 1
        return true
    }

    /// A producer that had a place reserved (by `takePlace` or `producersToAdmit`) added
    /// its operation, which now counts among the members instead.
    mutating func reservedPlaceUsed() {
        precondition(reservedPlaces > 0, "Operations: a producer used a reserved place (event: reservedPlaceUsed) while none was reserved")
        reservedPlaces -= 1
    }

    /// A producer found no place (`takePlace`): it waits, after those already waiting.
    mutating func producerWaits(_ waiter: QueueWaiter) {
        waiters.append(waiter)
    }

    /// A producer that waited gave up (its task was cancelled). If it had been admitted
    /// meanwhile, its place goes to the next ones.
    mutating func producerLeft(id: UInt64, members: Int) -> Departure {
        let removed = waiters.filter { $0.hasID(id) }
        guard removed.isEmpty else {
            waiters.removeAll { $0.hasID(id) }
            return Departure(removed: removed)
        }
        precondition(reservedPlaces > 0, "Operations: a producer that was admitted left (event: producerLeft) while no place was reserved")
        reservedPlaces -= 1
        return Departure(admitted: producersToAdmit(members: members))
    }

    /// What a producer's leaving leaves to do after the lock: drop its hook (`removed`),
    /// or wake the producers its place admits (`admitted`).
    struct Departure {
        var removed: [QueueWaiter] = []
        var admitted: [QueueWaiter] = []
    }

    /// The producers the room now admits, oldest first; each gets a place reserved.
    mutating func producersToAdmit(members: Int) -> [QueueWaiter] {
        var admitted: [QueueWaiter] = []
        let capacity = capacity ?? Int.max
        while !waiters.isEmpty, members + reservedPlaces < capacity {
            admitted.append(waiters.removeFirst())
            reservedPlaces += 1
        }
        return admitted
    }
}
