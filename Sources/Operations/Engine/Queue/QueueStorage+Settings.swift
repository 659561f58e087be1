// The queue as the holder of its lock: its settings, what the layers read of its state,
// the waits for it to become empty, and its capacity. Every section of the queue's lock
// is a method of the engine's; the layers above call these.

import Dispatch

extension OperationQueue {
    // MARK: Settings

    /// A change of one of the queue's settings.
    enum SettingChange {
        case limit(ConcurrencyLimit)
        case suspended(Bool)
        case name(String?)
        case qualityOfService(QualityOfService)

        /// The key observers of the setting are told of.
        var key: String {
            switch self {
            case .limit: "maxConcurrentOperationCount"
            case .suspended: "isSuspended"
            case .name: "name"
            case .qualityOfService: "qualityOfService"
            }
        }
    }

    /// Changes a setting under the lock, telling its observers around it, and starts the
    /// workers the change allows. Returns what a resumption left to do (run by the caller).
    @discardableResult
    final func _change(_ change: SettingChange) -> QueueSuspension.LeftForResumption {
        _settingWillChange(change.key)
        let (left, wakeup) = _withQueueLock { state -> (QueueSuspension.LeftForResumption, QueueCore.Wakeup) in
            var left = QueueSuspension.LeftForResumption()
            switch change {
            case .limit(let limit): state.setLimit(limit)
            case .suspended(let suspended): left = state.setSuspended(suspended)
            case .name(let name): state.setName(name)
            case .qualityOfService(let quality):
                state.setQualityOfService(quality)
                _threadQualityRawValue.store(quality.rawValue, ordering: .relaxed)
            }
            return (left, state.wakeup())
        }
        _settingDidChange(change.key)
        _perform(wakeup)
        return left
    }

    /// Sets the Dispatch queue the operations run on; returns why not (nothing changed):
    /// the main queue's, or a queue that has operations.
    final func _setUnderlyingQueue(_ queue: DispatchQueue?) -> String? {
        _withQueueLock { state in
            if state.isMain { return "the main queue's underlyingQueue cannot be changed" }
            if state.members.count > 0 { return "it has \(state.members.count) operations; set it only while the queue is empty" }
            state.setUnderlyingQueue(queue)
            return nil
        }
    }

    // MARK: Reading

    /// What the queue's state says now (one section of its lock; the value may be stale
    /// once returned).
    struct Snapshot {
        var limit: ConcurrencyLimit
        var isSuspended: Bool
        var executing: Int
        var name: String?
        var qualityOfService: QualityOfService
        var isQualityOfServiceSet: Bool
        var underlyingQueue: DispatchQueue?
        var isMain: Bool
        var capacity: Int?
        /// Finishes counted so far (see `QueueCore.progressStamp`).
        var progressStamp: UInt64
    }

    final var _snapshot: Snapshot {
        _withQueueLock { state in
            Snapshot(
                limit: state.limit, isSuspended: state.isSuspended, executing: state.executing, name: state.name,
                qualityOfService: state.qualityOfService, isQualityOfServiceSet: state.isQualityOfServiceSet,
                underlyingQueue: state.underlyingQueue, isMain: state.isMain, capacity: state.capacity,
                progressStamp: state.progressStamp)
        }
    }

    /// The operations in the queue, in the order added.
    final var _members: [Operation] { _withQueueLock { $0.members.all } }

    /// How many operations are in the queue.
    final var _memberCount: Int { _withQueueLock { $0.members.count } }

    /// The quality of service the queue gives the operations it makes, when one was set.
    final var _qualityOfServiceSet: QualityOfService? {
        _withQueueLock { $0.isQualityOfServiceSet ? $0.qualityOfService : nil }
    }

    // MARK: Waits for emptiness

    /// Adds the waiter `make` makes, to be woken once at most `remaining` operations count
    /// for the queue's waits; nil, with nothing made, when that is already so.
    final func _waitForEmptiness<Made>(allBut remaining: Int, _ make: () -> (QueueWaiter, Made)) -> Made? {
        _withQueueLock { state in
            guard state.membersForWaits > remaining else { return nil }
            let (waiter, made) = make()
            state.addWaiter(waiter, allBut: remaining)
            return made
        }
    }

    /// A task's wait for emptiness was cancelled: returns its hook, to drop after the lock.
    final func _stopWaitingForEmptiness(id: UInt64) -> [QueueWaiter] {
        _withQueueLock { $0.removeWaiter(id: id) }
    }

    // MARK: Capacity

    /// Sets the capacity; returns the producers it admits, to wake after the lock.
    final func _setCapacity(_ capacity: Int?) -> [QueueWaiter] {
        _withQueueLock { $0.setCapacity(capacity) }
    }

    /// Takes a place under the capacity (true), or adds `waiter` to the producers waiting
    /// for one (false).
    final func _takePlace(orWait waiter: @autoclosure () -> QueueWaiter) -> Bool {
        _withQueueLock { state in
            if state.takePlace() { return true }
            state.producerWaits(waiter())
            return false
        }
    }

    /// A waiting producer gave up: returns the hooks to drop and the producers to wake after
    /// the lock (see `ProducerAdmission.producerLeft`).
    final func _producerLeft(id: UInt64) -> ProducerAdmission.Departure {
        _withQueueLock { $0.producerLeft(id: id) }
    }
}
