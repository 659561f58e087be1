import Operations

/// An observer that calls `body` with each change of the keys it observes.
/// - Note: `@unchecked Sendable`: its one field is a `let` of a `Sendable` type.
public final class CallbackObserver: NSObject, @unchecked Sendable {
    public let body: @Sendable (String, [NSKeyValueChangeKey: Any]) -> Void

    public init(_ body: @escaping @Sendable (String, [NSKeyValueChangeKey: Any]) -> Void) {
        self.body = body
    }

    public override func observeValue(
        forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
        context: UnsafeMutableRawPointer?
    ) {
        body(keyPath ?? "", change ?? [:])
    }
}

extension [NSKeyValueChangeKey: Any] {
    /// Whether the change is the notification sent before the change (`.prior`).
    public var isPrior: Bool { self[.notificationIsPriorKey] as? Bool ?? false }
}

/// An observer written as on Darwin: an `NSObject` subclass overriding `observeValue`,
/// keeping every change it hears.
/// - Note: `@unchecked Sendable`: its one field is a `let` of a `Sendable` type.
public final class StateObserver: NSObject, @unchecked Sendable {
    public struct Event: Equatable, Sendable {
        public var keyPath: String
        public var new: String?
        public var old: String?
        public var prior: Bool

        public init(keyPath: String, new: String?, old: String?, prior: Bool) {
            self.keyPath = keyPath
            self.new = new
            self.old = old
            self.prior = prior
        }
    }

    public let events = Shared<[Event]>([])

    public override init() {
        super.init()
    }

    public override func observeValue(
        forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
        context: UnsafeMutableRawPointer?
    ) {
        let new = change?[.newKey].map { "\($0)" }
        let old = change?[.oldKey].map { "\($0)" }
        let prior = change?[.notificationIsPriorKey] as? Bool ?? false
        events.update { $0.append(Event(keyPath: keyPath ?? "", new: new, old: old, prior: prior)) }
    }

    /// The new values of `keyPath`'s changes, in order (prior notifications left out).
    public func values(for keyPath: String) -> [String?] {
        events().filter { $0.keyPath == keyPath && !$0.prior }.map(\.new)
    }
}
