// The signals that stop running workers gracefully: installed while a worker runs, for the
// whole process, and the process's earlier handling restored after the last one.
#if Durable

import Dispatch
@_spi(Engine) import Operations

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's stop signals. A signal is watched while at least one worker asked for it:
/// its default action (ending the process) is replaced by telling every such worker, and the
/// handling the process had before is restored when the last one stops watching.
///
/// A `ServiceGroup` that handles the same signal watches it beside this: both are told, and
/// both stop the worker, which is idempotent.
enum StopSignals {
    private struct Watched {
        var source: any DispatchSourceSignal
        var previous: Handler?
        var listeners: [Int: @Sendable () -> Void] = [:]
    }

    private struct State {
        var watched: [Int32: Watched] = [:]
        var nextListener = 0
    }

    private static let state = Locked(State())

    /// Calls `listener` on each of `signals` until the returned token is passed to `stopWatching`.
    static func watch(_ signals: [Int32], _ listener: @escaping @Sendable () -> Void) -> [Int32: Int] {
        var tokens: [Int32: Int] = [:]
        state.withLock { state in
            for signal in Set(signals) {
                state.nextListener += 1
                tokens[signal] = state.nextListener
                if state.watched[signal] == nil {
                    // Ignored first, so that the default action cannot end the process before
                    // the source is ready; the source still sees the signal.
                    let previous = Self.ignore(signal)
                    let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
                    source.setEventHandler { StopSignals.received(signal) }
                    source.resume()
                    state.watched[signal] = Watched(source: source, previous: previous)
                }
                state.watched[signal]!.listeners[state.nextListener] = listener
            }
        }
        return tokens
    }

    static func stopWatching(_ tokens: [Int32: Int]) {
        state.withLock { state in
            for (signal, token) in tokens {
                state.watched[signal]?.listeners[token] = nil
                guard let watched = state.watched[signal], watched.listeners.isEmpty else { continue }
                watched.source.cancel()
                Self.restore(signal, watched.previous)
                state.watched[signal] = nil
            }
        }
    }

    private static func received(_ signal: Int32) {
        let listeners = state.withLock { Array(($0.watched[signal]?.listeners ?? [:]).values) }
        for listener in listeners { listener() }
    }

    private static func ignore(_ number: Int32) -> Handler? {
        signal(number, SIG_IGN)
    }

    private static func restore(_ number: Int32, _ previous: Handler?) {
        _ = signal(number, previous ?? SIG_DFL)
    }

    private typealias Handler = @convention(c) (Int32) -> Void
}
#endif
