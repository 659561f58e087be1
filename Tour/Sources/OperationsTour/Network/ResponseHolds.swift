import Foundation

/// Responses the image server keeps back until a chapter releases them: the slow image is
/// slower than anything a chapter waits for, however loaded the machine, so a chapter that
/// cancels it always cancels it in flight (no race against a clock).
final class ResponseHolds: Sendable {
    private struct State {
        var held: [Int: Int] = [:]
        var waiters: [Int: [CheckedContinuation<Void, Never>]] = [:]
    }

    private let state = Protected(State())

    func hold(_ index: Int) {
        state.withLock { $0.held[index, default: 0] += 1 }
    }

    func release(_ index: Int) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard let count = state.held[index] else { return [] }
            guard count == 1 else {
                state.held[index] = count - 1
                return []
            }
            state.held[index] = nil
            return state.waiters.removeValue(forKey: index) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Releases every hold (the server is stopping).
    func releaseAll() {
        let waiters = state.withLock { state in
            defer { state = State() }
            return state.waiters.values.flatMap { $0 }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when no hold is on image `index`.
    func waitUntilReleased(_ index: Int) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let free = state.withLock { state -> Bool in
                guard state.held[index] != nil else { return true }
                state.waiters[index, default: []].append(waiter)
                return false
            }
            if free { waiter.resume() }
        }
    }
}

/// A hold on one image's responses; see ``ImageServer/hold(image:)``.
public final class ResponseHold: Sendable {
    private let holds: ResponseHolds
    private let index: Int
    private let released = Protected(false)

    init(holds: ResponseHolds, index: Int) {
        self.holds = holds
        self.index = index
        holds.hold(index)
    }

    /// Lets the held responses go. Safe to call more than once.
    public func release() {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        if first { holds.release(index) }
    }

    deinit { release() }
}
