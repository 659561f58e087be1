/// A value delivered once to one suspended task: the first `resume(with:)` wins, later
/// ones are ignored. The waiter may suspend before or after the value arrives.
///
/// The waiting side of every `async` wait in the library (an operation's finish, a queue
/// becoming empty, room in a queue): the thing waited for calls `resume(with:)` from a
/// hook, the waiting task's cancellation handler calls it with the "cancelled" value.
package final class AsyncSignal<Value: Sendable>: Sendable {
    private enum State {
        case initial
        case waiting(UnsafeContinuation<Value, Never>)
        case delivered(Value)
        case done
    }

    private let state = Locked(State.initial)

    package init() {}

    /// Delivers `value`; false when a value was delivered before (nothing happens then).
    @discardableResult
    package func resume(with value: Value) -> Bool {
        let continuation = state.withLock { state -> UnsafeContinuation<Value, Never>?? in
            switch state {
            case .initial:
                state = .delivered(value)
                return .some(nil)
            case .waiting(let continuation):
                state = .done
                return .some(continuation)
            case .delivered, .done:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation?.resume(returning: value)
        return true
    }

    /// Suspends until a value is delivered (at once if it was). Called once.
    package func value() async -> Value {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Value, Never>) in
            let delivered = state.withLock { state -> Value? in
                switch state {
                case .initial:
                    state = .waiting(continuation)
                    return nil
                case .delivered(let value):
                    state = .done
                    return value
                case .waiting, .done:
                    preconditionFailure("Operations: AsyncSignal awaited twice")
                }
            }
            if let delivered { continuation.resume(returning: delivered) }
        }
    }

    /// Suspends until a value is delivered, or the calling task is cancelled: then
    /// `cancelled` is delivered (unless a value came first).
    package func value(orOnCancel cancelled: Value) async -> Value {
        await withTaskCancellationHandler {
            await value()
        } onCancel: {
            resume(with: cancelled)
        }
    }
}
