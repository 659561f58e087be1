// Priority escalation: low-priority work that high-priority work waits for is raised, so
// that it does not hold the high-priority work up (priority inversion). Darwin does this
// for dependencies, Swift tasks do it for awaits; here both reach operations.

extension Operation {
    /// Raises this operation, and every unfinished operation it waits for (transitively),
    /// to at least `quality`: its ready band (refiled if it is in its queue's ready list),
    /// the quality of service of the thread that runs it, and the priority of its task.
    ///
    /// Never lowers anything. The walk stops at operations already escalated that high
    /// (what they wait for was raised with them).
    final func _escalate(to quality: QualityOfService) {
        var pending: [Operation] = [self]
        var seen = Set<ObjectIdentifier>()
        while let operation = pending.popLast() {
            guard seen.insert(ObjectIdentifier(operation)).inserted else { continue }
            let step = operation._update { state -> (refile: OperationQueue?, waitsFor: [Operation])? in
                guard !state.phase.isFinishingOrFinished else { return nil }
                if let escalated = state.escalatedQuality, escalated.rank >= quality.rank { return nil }
                state.escalatedQuality = quality
                let refile = state.phase.kind == .ready ? state.queue : nil
                return (refile, state.dependencies + state.hiddenDependencies)
            }
            guard let step else { continue }
            if let queue = step.refile {
                queue.core.withLock { $0.refile(operation) }
            }
            operation._escalateWork(to: quality)
            for dependency in step.waitsFor where !dependency._isFinishingFlag {
                pending.append(dependency)
            }
        }
    }
}

extension QueueCore {
    /// Moves an escalated operation (or one whose `queuePriority` was set) to the band its
    /// new priority chooses, if it is still in the ready list (its phase is `ready` and no
    /// barrier holds it). It keeps its place in the order added. O(log m) for m moved
    /// operations, wherever it waits.
    mutating func refile(_ operation: Operation) {
        let priority: Operation.QueuePriority? = operation._update { state in
            state.phase.kind == .ready ? state.effectivePriority : nil
        }
        // Held behind a barrier, it is filed in the band it has when the barrier has run;
        // about to be delivered, in the band read when it was found ready.
        guard let priority else { return }
        ready.move(operation, to: priority)
    }
}

extension QualityOfService {
    /// The quality of service that a task priority stands for.
    init(_ priority: TaskPriority) {
        switch priority.rawValue {
        case 33...: self = .userInteractive
        case 25..<33: self = .userInitiated
        case 21..<25: self = .default
        case 17..<21: self = .utility
        default: self = .background
        }
    }
}

extension TaskPriority {
    /// The task priority that runs work at `quality`.
    init(_ quality: QualityOfService) {
        switch quality {
        case .userInteractive: self.init(rawValue: 33)
        case .userInitiated: self = .high
        case .utility: self = .low
        case .background: self = .background
        default: self = .medium
        }
    }
}
