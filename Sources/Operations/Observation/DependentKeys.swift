/// Dependent keys (Darwin's `keyPathsForValuesAffectingValue(forKey:)`), resolved once per
/// class and key and cached.
///
/// Frameworks written for Darwin announce only `"state"` and declare that `isReady`,
/// `isExecuting` and `isFinished` depend on it. Observers of those keys must hear the
/// change, and so must the engine (see `Operation._affectedStateKeys(announced:)`).
enum DependentKeys {
    /// Per class: the keys triggering each key asked about, and the state keys affected by
    /// each announced key.
    private struct ClassTable {
        var triggers: [String: Set<String>] = [:]
        var affectedStateKeys: [String: [String]]?
    }

    private static let tables = Locked<[ObjectIdentifier: ClassTable]>([:])

    /// The classes whose announcements affect no state key through dependent keys (nearly
    /// all): their answer needs neither the lock nor the key's hash.
    private static let withoutAffectedStateKeys = ClassSet()

    /// Every key whose announced change affects `key` of instances of `type`, `key`
    /// included, in canonical spelling; `affecting` is the class's answer (user code, called
    /// with no lock held).
    static func triggers(
        of key: String, in type: AnyClass, affecting: (String) -> Set<String>
    ) -> Set<String> {
        let id = ObjectIdentifier(type)
        if let cached = tables.withLock({ $0[id]?.triggers[key] }) { return cached }
        // Breadth-first over the class's answers; `found` ends cycles.
        var found: Set<String> = [ObservationKey.canonical(key)]
        var pending = Set([key, ObservationKey.canonical(key)])
        var asked: Set<String> = []
        while let next = pending.popFirst() {
            asked.insert(next)
            for affecting in affecting(next) {
                found.insert(ObservationKey.canonical(affecting))
                if !asked.contains(affecting) { pending.insert(affecting) }
            }
        }
        // Racing threads compute the same set; the first one stays.
        return tables.withLock { tables in
            if let cached = tables[id]?.triggers[key] { return cached }
            tables[id, default: ClassTable()].triggers[key] = found
            return found
        }
    }

    /// The state keys (`isReady`, `isExecuting`, `isFinished`, `isCancelled`) that an
    /// announcement of `key` affects through dependent keys, in that order, without `key`
    /// itself.
    static func affectedStateKeys(
        announced key: String, in type: AnyClass, affecting: (String) -> Set<String>
    ) -> [String] {
        if withoutAffectedStateKeys.contains(type) { return [] }
        let id = ObjectIdentifier(type)
        let canonical = ObservationKey.canonical(key)
        if let map = tables.withLock({ $0[id]?.affectedStateKeys }) { return map[canonical] ?? [] }
        var map: [String: [String]] = [:]
        for stateKey in stateKeys {
            for trigger in triggers(of: stateKey, in: type, affecting: affecting) where trigger != stateKey {
                map[trigger, default: []].append(stateKey)
            }
        }
        let computed = map
        let result = tables.withLock { tables in
            if let cached = tables[id]?.affectedStateKeys { return cached }
            tables[id, default: ClassTable()].affectedStateKeys = computed
            return computed
        }
        if result.isEmpty { withoutAffectedStateKeys.insert(type) }
        return result[canonical] ?? []
    }

    static let stateKeys = ["isReady", "isExecuting", "isFinished", "isCancelled"]
}

extension Operation {
    /// The state keys the engine must handle when `key` is announced, beyond `key` itself:
    /// those that depend on `key` through the class's `keyPathsForValuesAffectingValue(forKey:)`
    /// (a framework announcing only `"state"`). Cached per class.
    final func _affectedStateKeys(announced key: String) -> [String] {
        let type = Swift.type(of: self)
        return DependentKeys.affectedStateKeys(announced: key, in: type) {
            type.keyPathsForValuesAffectingValue(forKey: $0)
        }
    }
}
