/// The ready operations of one queue: a FIFO per priority level, linked through the
/// operations themselves (`_nextReady`), so pushing and popping are O(1) and allocate
/// nothing. Guarded by the queue's lock.
///
/// References move rather than being copied (`take()`), and the tails are unretained:
/// the links are on the path of every operation, and each copied reference costs a
/// retain and a release. An operation outside the list has a nil `_nextReady` (`pop`
/// and `remove` clear it), so `push` need not.
struct ReadyList {
    private struct FIFO {
        var head: Operation?
        /// `Unmanaged`: the chain from `head` holds every operation of the level,
        /// the tail included, as long as it is in the list (and the queue's lock is held).
        var tail: Unmanaged<Operation>?
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
        if let tail = levels[level].tail {
            tail._withUnsafeGuaranteedRef { $0._nextReady = operation }
        } else {
            levels[level].head = operation
        }
        levels[level].tail = Unmanaged.passUnretained(operation)
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
                    let next = current._nextReady.take()
                    if levels[level].tail?.toOpaque() == Unmanaged.passUnretained(current).toOpaque() {
                        levels[level].tail = previous.map(Unmanaged.passUnretained)
                    }
                    if let previous { previous._nextReady = next } else { levels[level].head = next }
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
        let operation = levels[level].head.take()!
        levels[level].head = operation._nextReady.take()
        if levels[level].head == nil { levels[level].tail = nil }
        count -= 1
        return operation
    }
}

/// The operations of one queue that have not left it, in the order added, linked through
/// the operations (`_nextMember`, `_previousMember`): O(1) to add and remove. Guarded by
/// the queue's lock.
///
/// As in `ReadyList`, references move rather than being copied, and the backward links
/// are unretained. An operation outside the list has nil links (`remove` clears them).
struct MemberList {
    private var head: Operation?
    /// `Unmanaged`: the chain from `head` holds every member, the tail included, while it
    /// is in the list (and the queue's lock is held).
    private var tail: Unmanaged<Operation>?
    private(set) var count = 0
    /// Members that are the library's own (``Operation/_isHiddenMember``): the queue waits
    /// for them, but does not list or count them.
    private(set) var hiddenCount = 0

    /// The members the queue lists and counts.
    var visibleCount: Int { count - hiddenCount }

    mutating func append(_ operation: Operation) {
        operation._previousMember = tail
        if let tail { tail._withUnsafeGuaranteedRef { $0._nextMember = operation } } else { head = operation }
        tail = Unmanaged.passUnretained(operation)
        count += 1
        if operation._isHiddenMember { hiddenCount += 1 }
    }

    mutating func remove(_ operation: Operation) {
        let next = operation._nextMember.take()
        let previous = operation._previousMember.take()
        if let next { next._previousMember = previous } else { tail = previous }
        // Drops the list's reference to `operation` (the caller holds another).
        if let previous { previous._withUnsafeGuaranteedRef { $0._nextMember = next } } else { head = next }
        count -= 1
        if operation._isHiddenMember { hiddenCount -= 1 }
    }

    /// The members the queue lists, in the order added.
    var visible: [Operation] {
        guard hiddenCount > 0 else { return all }
        return all.filter { !$0._isHiddenMember }
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
