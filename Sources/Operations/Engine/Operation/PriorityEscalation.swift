// Priority escalation, one operation at a time: the engine raises an operation's ready band,
// its thread's quality of service and its task's priority. Which operations an escalation
// reaches (everything the raised one waits for) is the wait graph's to say.

extension Operation {
    /// Raises this operation to at least `quality`: its ready band (refiled if it is in its
    /// queue's ready list), the quality of service of the thread that runs it, and the
    /// priority of its task. Never lowers anything.
    ///
    /// Returns false, and does nothing, when it has finished or was already raised that
    /// high (what it waits for was raised with it).
    final func _raise(to quality: QualityOfService) -> Bool {
        let refile = _update { state -> OperationQueue?? in
            guard !state.phase.isFinishingOrFinished else { return nil }
            if let escalated = state.escalatedQuality, escalated.rank >= quality.rank { return nil }
            state.escalatedQuality = quality
            return .some(state.phase.kind == .ready ? state.queue : nil)
        }
        guard let refile else { return false }
        refile?._refile(self)
        _escalateWork(to: quality)
        return true
    }
}
