#if !canImport(ObjectiveC)
/// The observers of one object, and the values captured by `willChangeValue(forKey:)`.
///
/// Created the first time an observer is added. Changes are announced in two steps, as in
/// KVO: the registry decides under its lock which observers a change goes to, then reads
/// the values and calls them with no lock held.
final class ObservationRegistry: Sendable {
    typealias Handler = (AnyObject, [NSKeyValueChangeKey: Any]) -> Void

    /// One registration.
    /// - Note: `@unchecked Sendable`: the context pointer and the handler are never used by
    ///   the registry; they are handed back to the observer on whichever thread announces
    ///   the change, exactly as Darwin's KVO does.
    struct Entry: @unchecked Sendable {
        let id: UInt64
        weak var observer: NSObject?
        /// Taken at registration: inside the observer's `deinit` the weak reference already
        /// reads nil, yet the observer may still remove itself.
        let observerID: ObjectIdentifier?
        let keyPath: String
        /// The observed key, in canonical spelling.
        let key: String
        /// The keys whose announcements reach this registration: `key` and the keys it
        /// depends on.
        let triggers: Set<String>
        let options: NSKeyValueObservingOptions
        let context: UnsafeMutableRawPointer?
        let handler: Handler?
    }

    /// A `willChange` waiting for its `didChange`: one per thread and announced key, since
    /// pairs on one key from different threads may cross (Darwin keeps them per thread).
    private struct PendingChange: Hashable {
        let thread: UInt64
        let key: String
    }

    private struct State {
        var entries: [Entry] = []
        var nextID: UInt64 = 1
        /// Old values read at `willChange` (observed key → value), stacked per thread and
        /// announced key, popped at `didChange`.
        var pending: [PendingChange: [[String: ObservedValue]]] = [:]

        /// The old values of the innermost `willChange` waiting for `change`'s `didChange`.
        mutating func popPending(_ change: PendingChange) -> [String: ObservedValue] {
            let old = pending[change]?.popLast() ?? [:]
            if pending[change]?.isEmpty == true { pending[change] = nil }
            return old
        }
    }

    /// A value read for observers.
    /// - Note: `@unchecked Sendable`: the registry only stores it between `willChange` and
    ///   `didChange` and hands it to observers, as Darwin's KVO does.
    fileprivate struct ObservedValue: @unchecked Sendable {
        let value: Any
    }

    private let state = Locked(State())

    /// Adds a registration and returns it.
    func add(
        observer: NSObject?, keyPath: String, triggers: Set<String>, options: NSKeyValueObservingOptions,
        context: UnsafeMutableRawPointer?, handler: Handler?
    ) -> Entry {
        let observerID = observer.map(ObjectIdentifier.init)
        let (entry, stale) = state.withLock { state in
            // Registrations left by a dead object at the same address (it never removed them):
            // that object's `deinit` has ended, since a new one lives there now.
            let stale = state.entries.filter { $0.observerID == observerID && observerID != nil && $0.observer == nil }
            if !stale.isEmpty {
                state.entries.removeAll { $0.observerID == observerID && observerID != nil && $0.observer == nil }
            }
            let entry = Entry(
                id: state.nextID, observer: observer, observerID: observerID, keyPath: keyPath,
                key: ObservationKey.canonical(keyPath), triggers: triggers, options: options, context: context,
                handler: handler)
            state.nextID += 1
            state.entries.append(entry)
            return (entry, stale)
        }
        _ = stale
        return entry
    }

    /// Removes the most recent registration matching `observer` and `keyPath` (and
    /// `context` when given); returns it (for the caller to release with no lock held), or
    /// nil when there is none.
    func remove(
        observer: ObjectIdentifier, keyPath: String, context: UnsafeMutableRawPointer?, matchContext: Bool
    ) -> Entry? {
        state.withLock { state in
            guard let index = state.entries.lastIndex(where: {
                $0.observerID == observer && $0.keyPath == keyPath && (!matchContext || $0.context == context)
            }) else { return nil }
            return state.entries.remove(at: index)
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

    /// Announces that `key` of `object` is about to change: remembers the old values of the
    /// keys it affects for `didChange` and delivers `.prior` notifications.
    func willChange(_ object: some KeyValueObservable, key rawKey: String) {
        let key = ObservationKey.canonical(rawKey)
        let pending = PendingChange(thread: OperationEvent.currentThread, key: key)
        let entries = state.withLock { state in
            // Pushed even when nobody listens, so that every `didChange` pops its own.
            state.pending[pending, default: []].append([:])
            return state.entries.filter { $0.triggers.contains(key) }
        }
        guard !entries.isEmpty else { return }
        // Old values are read only when asked for (as on Darwin): the getters are user code.
        var old: [String: ObservedValue] = [:]
        for entry in entries where entry.options.contains(.old) && old[entry.key] == nil {
            old[entry.key] = ObservedValue(value: object._observableValue(forKey: entry.key) ?? NSNull())
        }
        if !old.isEmpty {
            let values = old
            state.withLock { state in
                // Announcements nested in the getters above are balanced: the top is ours.
                guard let top = state.pending[pending]?.indices.last else { return }
                state.pending[pending]![top] = values
            }
        }
        for entry in entries where entry.options.contains(.prior) {
            var change: [NSKeyValueChangeKey: Any] = [
                .kindKey: NSKeyValueChange.setting.rawValue, .notificationIsPriorKey: true,
            ]
            if entry.options.contains(.old), let value = old[entry.key] { change[.oldKey] = value.value }
            deliver(entry, object: object, change: change)
        }
    }

    /// Announces that `key` of `object` has changed: delivers the notifications.
    func didChange(_ object: some KeyValueObservable, key rawKey: String) {
        let key = ObservationKey.canonical(rawKey)
        let pending = PendingChange(thread: OperationEvent.currentThread, key: key)
        let (entries, old) = state.withLock { state -> ([Entry], [String: ObservedValue]) in
            let old = state.popPending(pending)
            return (state.entries.filter { $0.triggers.contains(key) }, old)
        }
        deliver(entries, of: object, old: old)
    }

    private func deliver(_ entries: [Entry], of object: some KeyValueObservable, old: [String: ObservedValue]) {
        guard !entries.isEmpty else { return }
        var new: [String: Any] = [:]
        for entry in entries where entry.options.contains(.new) && new[entry.key] == nil {
            new[entry.key] = object._observableValue(forKey: entry.key) ?? NSNull()
        }
        for entry in entries {
            var change: [NSKeyValueChangeKey: Any] = [.kindKey: NSKeyValueChange.setting.rawValue]
            if entry.options.contains(.new), let value = new[entry.key] { change[.newKey] = value }
            if entry.options.contains(.old), let value = old[entry.key] { change[.oldKey] = value.value }
            deliver(entry, object: object, change: change)
        }
    }

    /// A `didChange` taken off its thread's pending changes (with the old values its
    /// `willChange` read), to be delivered later, possibly from another thread.
    struct TakenChange: Sendable {
        fileprivate let key: String
        fileprivate let old: [String: ObservedValue]
    }

    /// The first half of `didChange(_:key:)`: pairs the announcement with its `willChange`
    /// on this thread. `deliver(_:of:)` tells the observers.
    func takeChange(key rawKey: String) -> TakenChange {
        let key = ObservationKey.canonical(rawKey)
        let pending = PendingChange(thread: OperationEvent.currentThread, key: key)
        let old = state.withLock { $0.popPending(pending) }
        return TakenChange(key: key, old: old)
    }

    /// The second half of `didChange(_:key:)`: tells the observers registered now, with the
    /// values their getters read now.
    func deliver(_ change: TakenChange, of object: some KeyValueObservable) {
        let entries = state.withLock { $0.entries.filter { $0.triggers.contains(change.key) } }
        deliver(entries, of: object, old: change.old)
    }

    /// Delivers the `.initial` notification of a new registration.
    func deliverInitial(_ entry: Entry, object: some KeyValueObservable) {
        var change: [NSKeyValueChangeKey: Any] = [.kindKey: NSKeyValueChange.setting.rawValue]
        if entry.options.contains(.new) { change[.newKey] = object._observableValue(forKey: entry.key) ?? NSNull() }
        deliver(entry, object: object, change: change)
    }

    private func deliver(_ entry: Entry, object: AnyObject, change: [NSKeyValueChangeKey: Any]) {
        if let handler = entry.handler {
            handler(object, change)
        } else if let observer = entry.observer {
            observer.observeValue(forKeyPath: entry.keyPath, of: object, change: change, context: entry.context)
        }
    }
}
#endif

/// Key spellings: `"finished"` and `"isFinished"` name the same key.
///
/// Both functions look at the length first: equal strings compare in one step, unequal
/// ones call into the runtime, and every state change of an operation asks here.
enum ObservationKey {
    static func canonical(_ key: String) -> String {
        switch key.utf8.count {
        case 5: key == "ready" ? "isReady" : key
        case 8: key == "finished" ? "isFinished" : key
        case 9:
            key == "executing" ? "isExecuting"
                : key == "cancelled" ? "isCancelled" : key == "suspended" ? "isSuspended" : key
        case 10: key == "concurrent" ? "isConcurrent" : key
        case 12: key == "asynchronous" ? "isAsynchronous" : key
        default: key
        }
    }

    /// The operation state that `key` names, in either spelling; nil for any other key.
    static func stateKey(_ key: String) -> StateKey? {
        switch key.utf8.count {
        case 5: key == "ready" ? .isReady : nil
        case 7: key == "isReady" ? .isReady : nil
        case 8: key == "finished" ? .isFinished : nil
        case 9: key == "executing" ? .isExecuting : key == "cancelled" ? .isCancelled : nil
        case 10: key == "isFinished" ? .isFinished : nil
        case 11: key == "isExecuting" ? .isExecuting : key == "isCancelled" ? .isCancelled : nil
        default: nil
        }
    }

    /// The keys of an operation's state.
    enum StateKey {
        case isReady, isExecuting, isFinished, isCancelled
    }
}
