import Synchronization

/// Hooks registered with a queue, each under an identifier that a subscription removes it
/// by. Guarded by the lock of whoever owns it.
///
/// Callers take a snapshot of the registrations under the lock and call them after it; a
/// registration removed meanwhile is marked inactive, and a caller checks each before its
/// call. A removal does not wait for a caller that checked just before it: that one call
/// may still happen after the removal returned (waiting could deadlock with a lock the
/// remover holds and the hook takes).
struct HookList<Hook: Sendable> {
    private(set) var registrations: [HookRegistration<Hook>] = []
    private var nextID: UInt64 = 1

    var isEmpty: Bool { registrations.isEmpty }

    /// Adds `hook`; returns its identifier.
    mutating func add(_ hook: Hook) -> UInt64 {
        defer { nextID += 1 }
        registrations.append(HookRegistration(id: nextID, hook: hook))
        return nextID
    }

    /// Removes the hook `id` and marks it inactive; returns what was removed, for the caller
    /// to drop after its lock (a hook's captures' deinit is user code).
    mutating func remove(_ id: UInt64) -> [HookRegistration<Hook>] {
        let removed = registrations.filter { $0.id == id }
        registrations.removeAll { $0.id == id }
        for registration in removed { registration.deactivate() }
        return removed
    }
}

/// One registered hook, and whether it is still registered.
final class HookRegistration<Hook: Sendable>: Sendable {
    let id: UInt64
    let hook: Hook
    private let active = Atomic(true)

    init(id: UInt64, hook: Hook) {
        self.id = id
        self.hook = hook
    }

    /// False once removed: a snapshot taken before the removal must not call it any more.
    var isActive: Bool { active.load(ordering: .acquiring) }

    fileprivate func deactivate() { active.store(false, ordering: .releasing) }
}
