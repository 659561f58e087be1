#if !canImport(ObjectiveC)
/// The observers of one object, and the values captured by `willChangeValue(forKey:)`.
///
/// Created the first time an observer is added. Changes are announced in two steps, as in
/// KVO: the registry decides under its lock which observers a change goes to, then reads
/// the value and calls them with no lock held.
final class ObservationRegistry: Sendable {
    /// One registration.
    /// - Note: `@unchecked Sendable`: the context pointer and the handler are never used by
    ///   the registry; they are handed back to the observer on whichever thread announces
    ///   the change, exactly as Darwin's KVO does.
    struct Entry: @unchecked Sendable {
        let id: UInt64
        weak var observer: NSObject?
        let keyPath: String
        let key: String
        let options: NSKeyValueObservingOptions
        let context: UnsafeMutableRawPointer?
        let handler: ((NSObject, [NSKeyValueChangeKey: Any]) -> Void)?
    }

    private struct State {
        var entries: [Entry] = []
        var nextID: UInt64 = 1
        /// Values read at `willChange`, popped at `didChange`, per canonical key.
        var priorValues: [String: [ObservedValue]] = [:]
    }

    /// A value read for observers.
    /// - Note: `@unchecked Sendable`: the registry only stores it between `willChange` and
    ///   `didChange` and hands it to observers, as Darwin's KVO does.
    private struct ObservedValue: @unchecked Sendable {
        let value: Any
    }

    private let state = Locked(State())

    /// Adds a registration and returns its identifier.
    func add(
        observer: NSObject?, keyPath: String, options: NSKeyValueObservingOptions,
        context: UnsafeMutableRawPointer?, handler: ((NSObject, [NSKeyValueChangeKey: Any]) -> Void)?
    ) -> Entry {
        state.withLock { state in
            let entry = Entry(
                id: state.nextID, observer: observer, keyPath: keyPath, key: ObservationKey.canonical(keyPath),
                options: options, context: context, handler: handler)
            state.nextID += 1
            state.entries.append(entry)
            return entry
        }
    }

    /// Removes the most recent registration matching `observer` and `keyPath` (and
    /// `context` when given); returns false when there is none.
    func remove(observer: NSObject, keyPath: String, context: UnsafeMutableRawPointer?, matchContext: Bool) -> Bool {
        state.withLock { state in
            guard let index = state.entries.lastIndex(where: {
                $0.observer === observer && $0.keyPath == keyPath && (!matchContext || $0.context == context)
            }) else { return false }
            state.entries.remove(at: index)
            return true
        }
    }

    func remove(id: UInt64) {
        // Handlers are released after the lock: their captures' deinit is user code.
        let removed = state.withLock { state in
            defer { state.entries.removeAll { $0.id == id } }
            return state.entries.filter { $0.id == id }
        }
        _ = removed
    }

    /// Announces that `key` of `object` is about to change: delivers `.prior` notifications
    /// and remembers the old value for `didChange`.
    func willChange(_ object: NSObject, key rawKey: String) {
        let key = ObservationKey.canonical(rawKey)
        let entries = state.withLock { state in
            state.entries.removeAll { $0.handler == nil && $0.observer == nil }
            return state.entries.filter { $0.key == key }
        }
        guard !entries.isEmpty else { return }
        let old = object._observableValue(forKey: key) ?? NSNull()
        state.withLock { state in state.priorValues[key, default: []].append(ObservedValue(value: old)) }
        for entry in entries where entry.options.contains(.prior) {
            var change: [NSKeyValueChangeKey: Any] = [
                .kindKey: NSKeyValueChange.setting.rawValue, .notificationIsPriorKey: true,
            ]
            if entry.options.contains(.old) { change[.oldKey] = old }
            deliver(entry, object: object, change: change)
        }
    }

    /// Announces that `key` of `object` has changed: delivers the notifications.
    func didChange(_ object: NSObject, key rawKey: String) {
        let key = ObservationKey.canonical(rawKey)
        let (entries, old) = state.withLock { state -> ([Entry], ObservedValue?) in
            let old = state.priorValues[key]?.popLast()
            if state.priorValues[key]?.isEmpty == true { state.priorValues[key] = nil }
            return (state.entries.filter { $0.key == key }, old)
        }
        guard !entries.isEmpty else { return }
        let new = entries.contains { $0.options.contains(.new) } ? (object._observableValue(forKey: key) ?? NSNull()) : nil
        for entry in entries {
            var change: [NSKeyValueChangeKey: Any] = [.kindKey: NSKeyValueChange.setting.rawValue]
            if entry.options.contains(.new), let new { change[.newKey] = new }
            if entry.options.contains(.old), let old { change[.oldKey] = old.value }
            deliver(entry, object: object, change: change)
        }
    }

    /// Delivers the `.initial` notification of a new registration.
    func deliverInitial(_ entry: Entry, object: NSObject) {
        var change: [NSKeyValueChangeKey: Any] = [.kindKey: NSKeyValueChange.setting.rawValue]
        if entry.options.contains(.new) { change[.newKey] = object._observableValue(forKey: entry.key) ?? NSNull() }
        deliver(entry, object: object, change: change)
    }

    private func deliver(_ entry: Entry, object: NSObject, change: [NSKeyValueChangeKey: Any]) {
        if let handler = entry.handler {
            handler(object, change)
        } else if let observer = entry.observer {
            observer.observeValue(forKeyPath: entry.keyPath, of: object, change: change, context: entry.context)
        }
    }
}
#endif

/// Key spellings: `"finished"` and `"isFinished"` name the same key.
enum ObservationKey {
    static func canonical(_ key: String) -> String {
        switch key {
        case "ready": "isReady"
        case "executing": "isExecuting"
        case "finished": "isFinished"
        case "cancelled": "isCancelled"
        case "asynchronous": "isAsynchronous"
        case "concurrent": "isConcurrent"
        case "suspended": "isSuspended"
        default: key
        }
    }
}
