import Operations

extension OperationExtensions where Self: Operation {
    /// Suspends until the operation has finished and returns its outcome, or nil when it
    /// has not finished within `limit` of real time (a safety net so that a broken test
    /// fails instead of hanging; not a way to synchronize).
    public func outcome(within limit: Duration) async -> Operation.Outcome? {
        await withTaskGroup(of: Operation.Outcome?.self) { group in
            group.addTask {
                await self.waitUntilFinished()
                return self.outcome
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
