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
            step.refile?._refile(operation)
            operation._escalateWork(to: quality)
            for dependency in step.waitsFor where !dependency._isFinishingFlag {
                pending.append(dependency)
            }
        }
    }
}
