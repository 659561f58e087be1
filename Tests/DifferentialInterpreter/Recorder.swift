
/// What a run observed: values by key, and the order in which operations (and barriers)
/// began their work. Written from any thread.
final class Recorder: Sendable {
    private struct State {
        var values: [String: String] = [:]
        var order: [String] = []
        var entered: Set<String> = []
    }

    private let state = Guarded(State())

    func set(_ key: String, _ value: String) {
        state.withLock { $0.values[key] = value }
    }

    func set(_ key: String, _ value: Bool) {
        set(key, value ? "true" : "false")
    }

    func increment(_ key: String) {
        state.withLock { $0.values[key] = String((Int($0.values[key] ?? "0") ?? 0) + 1) }
    }

    /// Sets `key` to `value` unless something was recorded there.
    func setDefault(_ key: String, _ value: String) {
        state.withLock { state in
            if state.values[key] == nil { state.values[key] = value }
        }
    }

    func append(_ key: String, _ element: String) {
        state.withLock { state in
            state.values[key] = state.values[key].map { "\($0) \(element)" } ?? element
        }
    }

    /// Places `name` in the start order the first time it begins work.
    func enter(_ name: String) {
        state.withLock { state in
            if state.entered.insert(name).inserted { state.order.append(name) }
        }
    }

    var values: [String: String] { state.withLock { $0.values } }
    var order: [String] { state.withLock { $0.order } }
}
