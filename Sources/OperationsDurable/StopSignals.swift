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

/// The process's stop signals. A signal is watched while at least one worker asked for it,
/// with a Dispatch signal source, as swift-service-lifecycle's `ServiceGroup` does: every
/// source of the signal is told (a `ServiceGroup`'s and the workers'), and stopping twice is
/// stopping once.
///
/// On Linux, Dispatch catches the signal with a handler of its own, installed when the
/// process makes its first source for that signal and kept for the life of the process: the
/// signal no longer ends the process, also after the last worker returned, and no
/// disposition is changed here (ignoring the signal would hide it from Dispatch's handler
/// for good). On Darwin, Dispatch sees a signal through kqueue beside its disposition, so the
/// signal is ignored while watched and the earlier disposition restored afterwards.
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

    /// Darwin: ignored, so that the default action cannot end the process (kqueue still
    /// sees the signal). Linux: left alone for Dispatch's handler.
    private static func ignore(_ number: Int32) -> Handler? {
        #if canImport(Darwin)
        return signal(number, SIG_IGN)
        #else
        return nil
        #endif
    }

    private static func restore(_ number: Int32, _ previous: Handler?) {
        #if canImport(Darwin)
        _ = signal(number, previous ?? SIG_DFL)
        #endif
    }

    private typealias Handler = @convention(c) (Int32) -> Void
}
#endif
