#if !canImport(ObjectiveC)
import Synchronization

/// Where an observable object keeps its `ObservationRegistry`: nothing until the first
/// observer, so that unobserved objects pay one atomic load per announcement.
///
/// Held inline by our `NSObject` and our `Progress`; the registry is released with the object.
struct ObservationStorage: ~Copyable, Sendable {
    /// The retained registry's address, 0 before the first observer. A plain integer: an
    /// atomic of an optional reference is generic, which an unoptimized build (the tests run
    /// in one) pays for at every look, and unobserved objects look at every change.
    private let slot = Atomic<UInt>(0)

    init() {}

    deinit {
        let address = slot.load(ordering: .acquiring)
        if address != 0 { Self.registry(at: address).release() }
    }

    private static func registry(at address: UInt) -> Unmanaged<ObservationRegistry> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
    }

    /// Whether an observer was ever added.
    var hasRegistry: Bool { slot.load(ordering: .acquiring) != 0 }

    /// The registry, if any observer was ever added.
    var registry: ObservationRegistry? {
        let address = slot.load(ordering: .acquiring)
        return address == 0 ? nil : Self.registry(at: address).takeUnretainedValue()
    }

    /// The registry, created on first use.
    func makeRegistry() -> ObservationRegistry {
        if let existing = registry { return existing }
        let fresh = Unmanaged.passRetained(ObservationRegistry())
        let (exchanged, current) = slot.compareExchange(
            expected: 0, desired: UInt(bitPattern: fresh.toOpaque()), ordering: .acquiringAndReleasing)
        if exchanged { return fresh.takeUnretainedValue() }
        fresh.release()
        return Self.registry(at: current).takeUnretainedValue()
    }
}

/// An object whose changes an `ObservationRegistry` reports: our `NSObject` and our `Progress`.
protocol KeyValueObservable: AnyObject {
    /// The registry, if any observer was ever added.
    var _observationRegistry: ObservationRegistry? { get }
    /// The registry, created on first use.
    func _makeObservationRegistry() -> ObservationRegistry
    /// The current value of an observable key, read when a change is announced (user code
    /// may run: call it with no lock held). Nil for keys that carry no value.
    func _observableValue(forKey key: String) -> Any?
    /// The keys a change of which is reported to the observers of `key` (dependent keys,
    /// transitively), `key` included. May call user code: call it with no lock held.
    func _keysTriggering(_ key: String) -> Set<String>
}

extension KeyValueObservable {
    /// `addObserver(_:forKeyPath:options:context:)`.
    func _addObserver(
        _ observer: NSObject, keyPath: String, options: NSKeyValueObservingOptions, context: UnsafeMutableRawPointer?
    ) {
        let triggers = _keysTriggering(keyPath)
        let registry = _makeObservationRegistry()
        let entry = registry.add(
            observer: observer, keyPath: keyPath, triggers: triggers, options: options, context: context, handler: nil)
        if options.contains(.initial) { registry.deliverInitial(entry, object: self) }
    }

    /// `removeObserver(_:forKeyPath:context:)` (`matchContext`) and `removeObserver(_:forKeyPath:)`.
    func _removeObserver(
        _ observer: NSObject, keyPath: String, context: UnsafeMutableRawPointer?, matchContext: Bool
    ) {
        let removed = _observationRegistry?.remove(
            observer: ObjectIdentifier(observer), keyPath: keyPath, context: context, matchContext: matchContext)
        guard let removed else {
            Misuse.fail("cannot remove observer \(observer) for key path \"\(keyPath)\" from \(self): it is not registered as an observer")
        }
        // Released here, with no lock held.
        _ = removed
    }

    /// Registers a change handler; used by `observe(_:options:changeHandler:)`.
    func _observe(
        keys: [String], options: NSKeyValueObservingOptions,
        handler: @escaping (AnyObject, [NSKeyValueChangeKey: Any]) -> Void
    ) -> NSKeyValueObservation {
        let triggers = keys.map { _keysTriggering($0) }
        let registry = _makeObservationRegistry()
        let entries = zip(keys, triggers).map { key, triggers in
            registry.add(observer: nil, keyPath: key, triggers: triggers, options: options, context: nil, handler: handler)
        }
        let observation = NSKeyValueObservation(registry: registry, ids: entries.map(\.id))
        if options.contains(.initial) {
            for entry in entries { registry.deliverInitial(entry, object: self) }
        }
        return observation
    }
}
#endif
