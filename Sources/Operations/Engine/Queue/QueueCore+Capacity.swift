// Back-pressure: producers waiting for room under a queue's capacity.

// MARK: - Capacity (back-pressure)

extension QueueCore {
    /// Returns the producers the new capacity admits, oldest first.
    mutating func setCapacity(_ capacity: Int?) -> [QueueWaiter] {
        self.capacity = capacity
        return producersToAdmit()
    }

    /// Whether a producer may add now: room under the capacity, and nobody waiting before
    /// it. Takes a place when it may.
    mutating func takePlace() -> Bool {
        if let capacity {
            guard capacityWaiters.isEmpty, members.count + reservedPlaces < capacity else { return false }
        }
        reservedPlaces += 1
        return true
    }

    /// A producer that had a place reserved (by `takePlace` or `producersToAdmit`) added
    /// its operation, which now counts among the members instead.
    mutating func reservedPlaceUsed() {
        reservedPlaces -= 1
    }

    /// A producer found no place (`takePlace`): it waits, after those already waiting.
    mutating func producerWaits(_ waiter: QueueWaiter) {
        capacityWaiters.append(waiter)
    }

    /// A producer that waited gave up (its task was cancelled). If it had been admitted
    /// meanwhile, its place goes to the next ones. Returns the producers to wake.
    mutating func producerLeft(id: UInt64) -> (removed: [QueueWaiter], admitted: [QueueWaiter]) {
        let removed = capacityWaiters.filter { $0.hasID(id) }
        guard removed.isEmpty else {
            capacityWaiters.removeAll { $0.hasID(id) }
            return (removed, [])
        }
        reservedPlaces -= 1
        return ([], producersToAdmit())
    }

    /// The producers the room now admits, oldest first; each gets a place reserved.
    mutating func producersToAdmit() -> [QueueWaiter] {
        var admitted: [QueueWaiter] = []
        let capacity = capacity ?? Int.max
        while !capacityWaiters.isEmpty, members.count + reservedPlaces < capacity {
            admitted.append(capacityWaiters.removeFirst())
            reservedPlaces += 1
        }
        return admitted
    }
}

/// Something waiting on a queue: a blocked thread or a hook (a suspended task).
enum QueueWaiter {
    case thread(DispatchSemaphore)
    case hook(id: UInt64, @Sendable () -> Void)

    func wake() {
        switch self {
        case .thread(let semaphore): semaphore.signal()
        case .hook(_, let hook): hook()
        }
    }

    func hasID(_ id: UInt64) -> Bool {
        if case .hook(id, _) = self { return true }
        return false
    }
}
