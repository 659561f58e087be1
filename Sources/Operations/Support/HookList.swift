/// Hooks registered with a queue, each under an identifier that a subscription removes it
/// by. Guarded by the lock of whoever owns it.
struct HookList<Hook> {
    private(set) var hooks: [(id: UInt64, hook: Hook)] = []
    private var nextID: UInt64 = 1

    var isEmpty: Bool { hooks.isEmpty }

    /// Adds `hook`; returns its identifier.
    mutating func add(_ hook: Hook) -> UInt64 {
        defer { nextID += 1 }
        hooks.append((nextID, hook))
        return nextID
    }

    /// Removes the hook `id`; returns what was removed, for the caller to drop after its
    /// lock (a hook's captures' deinit is user code).
    mutating func remove(_ id: UInt64) -> [Hook] {
        let removed = hooks.filter { $0.id == id }.map(\.hook)
        hooks.removeAll { $0.id == id }
        return removed
    }
}
