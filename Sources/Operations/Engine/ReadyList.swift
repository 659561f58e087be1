/// The ready operations of one queue: a FIFO per priority level, linked through the
/// operations themselves (`_nextReady`), so pushing and popping are O(1) and allocate
/// nothing. Guarded by the queue's lock.
struct ReadyList {
    private struct FIFO {
        var head: Operation?
        unowned(unsafe) var tail: Operation?
    }

    /// Indexed by priority level, lowest first.
    private var levels = [FIFO](repeating: FIFO(), count: 5)
    private(set) var count = 0

    static func level(of priority: Operation.QueuePriority) -> Int {
        switch priority {
        case .veryLow: 0
        case .low: 1
        case .normal: 2
        case .high: 3
        case .veryHigh: 4
        }
    }

    mutating func push(_ operation: Operation, priority: Operation.QueuePriority) {
        let level = Self.level(of: priority)
        operation._nextReady = nil
        if let tail = levels[level].tail {
            tail._nextReady = operation
        } else {
            levels[level].head = operation
        }
        levels[level].tail = operation
        count += 1
    }

    /// Removes a given operation; false when it is not in the list. O(n) in its level:
    /// only for undoing a refused batch and for refiling an escalated operation.
    @discardableResult
    mutating func remove(_ operation: Operation) -> Bool {
        for level in levels.indices {
            var previous: Operation?
            var cursor = levels[level].head
            while let current = cursor {
                if current === operation {
                    if let previous { previous._nextReady = current._nextReady } else { levels[level].head = current._nextReady }
                    if levels[level].tail === current { levels[level].tail = previous }
                    current._nextReady = nil
                    count -= 1
                    return true
                }
                previous = current
                cursor = current._nextReady
            }
        }
        return false
    }

    /// The operation `pop()` would return, left in the list.
    func peek() -> Operation? {
        guard count > 0 else { return nil }
        var level = 4
        while levels[level].head == nil { level -= 1 }
        return levels[level].head
    }

    /// The oldest operation of the highest priority level.
    mutating func pop() -> Operation? {
        guard count > 0 else { return nil }
        var level = 4
        while levels[level].head == nil { level -= 1 }
        let operation = levels[level].head!
        levels[level].head = operation._nextReady
        if levels[level].head == nil { levels[level].tail = nil }
        operation._nextReady = nil
        count -= 1
        return operation
    }
}

/// The operations of one queue that have not left it, in the order added, linked through
/// the operations (`_nextMember`, `_previousMember`): O(1) to add and remove. Guarded by
/// the queue's lock.
struct MemberList {
    private var head: Operation?
    private unowned(unsafe) var tail: Operation?
    private(set) var count = 0

    mutating func append(_ operation: Operation) {
        operation._previousMember = tail
        operation._nextMember = nil
        if let tail { tail._nextMember = operation } else { head = operation }
        tail = operation
        count += 1
    }

    mutating func remove(_ operation: Operation) {
        let next = operation._nextMember
        let previous = operation._previousMember
        if let previous { previous._nextMember = next } else { head = next }
        if let next { next._previousMember = previous } else { tail = previous }
        operation._nextMember = nil
        operation._previousMember = nil
        count -= 1
    }

    var all: [Operation] {
        var result: [Operation] = []
        result.reserveCapacity(count)
        var cursor = head
        while let operation = cursor {
            result.append(operation)
            cursor = operation._nextMember
        }
        return result
    }
}
