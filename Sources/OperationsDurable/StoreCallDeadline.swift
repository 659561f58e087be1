// A store call the worker gives up on after a while, even when the call ignores cancellation.
#if Durable

@_spi(Engine) import Operations

/// The body's result, or a thrown ``DurableError`` (`.databaseUnreachable`) once `duration`
/// has passed.
///
/// - Important: Returns at the deadline even when the body does not end on cancellation (a
///   query whose connection dropped mid-call may never answer): the body is cancelled and left
///   behind, and its result is dropped. Only for calls that are safe to repeat or to lose.
func withDeadline<T: Sendable>(
    _ duration: Duration, _ what: String, abandonedBy calls: StoreCallsInFlight? = nil,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    let token = calls?.enter(race, what: what)
    defer { if let token { calls?.leave(token) } }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(continuation, duration: duration, what: what, body: body)
        }
    } onCancel: {
        race.cancel()
    }
}

/// A call that can be given up on before its deadline.
protocol AbandonableCall: Sendable {
    func abandon(_ error: DurableError)
}

/// The calls a worker makes that wait for the database, so that they can be given up on when
/// the database comes back: a call sent just as the server went away can stay unanswered
/// until its deadline, and the worker would start nothing meanwhile.
final class StoreCallsInFlight: Sendable {
    private struct Call {
        let call: any AbandonableCall
        let what: String
        let started: ContinuousClock.Instant
    }

    private let calls = Locked<(next: Int, calls: [Int: Call])>((0, [:]))

    func enter(_ call: any AbandonableCall, what: String) -> Int {
        calls.withLock { state in
            state.next += 1
            state.calls[state.next] = Call(call: call, what: what, started: .now)
            return state.next
        }
    }

    func leave(_ token: Int) {
        calls.withLock { _ = $0.calls.removeValue(forKey: token) }
    }

    /// Gives up on the calls that started before `instant`: each throws at once, and the
    /// caller tries again on a fresh connection.
    func abandon(startedBefore instant: ContinuousClock.Instant) {
        let stale = calls.withLock { state in state.calls.values.filter { $0.started < instant } }
        for call in stale {
            call.call.abandon(DurableError(.databaseUnreachable, "\(call.what): given up: the store reconnected while it waited"))
        }
    }
}

/// The body against a timer: whichever ends first resumes the caller, exactly once, and the
/// other is cancelled.
private final class DeadlineRace<T: Sendable>: AbandonableCall {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var tasks: [Task<Void, Never>] = []
        var cancelled = false
    }

    private let state = Locked(State())

    func start(
        _ continuation: CheckedContinuation<T, any Error>, duration: Duration, what: String,
        body: @escaping @Sendable () async throws -> T
    ) {
        let cancelledAlready = state.withLock { state -> Bool in
            state.continuation = continuation
            return state.cancelled
        }
        if cancelledAlready {
            finish(.failure(CancellationError()))
            return
        }
        let work = Task {
            do {
                self.finish(.success(try await body()))
            } catch {
                self.finish(.failure(error))
            }
        }
        let timer = Task {
            do {
                try await Task.sleep(for: duration)
            } catch {
                return
            }
            self.finish(.failure(DurableError(.databaseUnreachable, "\(what): no answer within \(duration)")))
        }
        let finishedAlready = state.withLock { state -> Bool in
            if state.continuation == nil { return true }
            state.tasks = [work, timer]
            return false
        }
        if finishedAlready {
            work.cancel()
            timer.cancel()
        }
    }

    func abandon(_ error: DurableError) {
        finish(.failure(error))
    }

    func cancel() {
        let waiting = state.withLock { state -> Bool in
            state.cancelled = true
            return state.continuation != nil
        }
        if waiting { finish(.failure(CancellationError())) }
    }

    private func finish(_ result: Result<T, any Error>) {
        let (continuation, tasks) = state.withLock { state in
            let taken = (state.continuation, state.tasks)
            state.continuation = nil
            state.tasks = []
            return taken
        }
        guard let continuation else { return }
        for task in tasks { task.cancel() }
        continuation.resume(with: result)
    }
}
#endif
