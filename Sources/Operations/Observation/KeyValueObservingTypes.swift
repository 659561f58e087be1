#if !canImport(ObjectiveC)
// Linux's Foundation has no key-value observing. These are the option and change types of
// Darwin's KVO, with the same names, so that observer code compiles unchanged.

/// What an observation delivers: Darwin's `NSKeyValueObservingOptions`.
public struct NSKeyValueObservingOptions: OptionSet, Sendable, Hashable {
    /// The options as bits, as on Darwin.
    public let rawValue: UInt
    /// Creates options from their bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Deliver the new value (`change[.newKey]`, `change.newValue`).
    public static let new = NSKeyValueObservingOptions(rawValue: 0x01)
    /// Deliver the old value (`change[.oldKey]`, `change.oldValue`).
    public static let old = NSKeyValueObservingOptions(rawValue: 0x02)
    /// Deliver one change at once, when the observer is added.
    public static let initial = NSKeyValueObservingOptions(rawValue: 0x04)
    /// Deliver a change before each change as well (`change[.notificationIsPriorKey]` is true).
    public static let prior = NSKeyValueObservingOptions(rawValue: 0x08)
}

/// The keys of a change dictionary: Darwin's `NSKeyValueChangeKey`.
public struct NSKeyValueChangeKey: RawRepresentable, Hashable, Sendable {
    /// The key as a string.
    public let rawValue: String
    /// Creates a key from its string.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a key from its string.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The kind of the change, an `NSKeyValueChange` raw value.
    public static let kindKey = NSKeyValueChangeKey("kind")
    /// The new value, when `.new` was asked for.
    public static let newKey = NSKeyValueChangeKey("new")
    /// The old value, when `.old` was asked for.
    public static let oldKey = NSKeyValueChangeKey("old")
    /// The indexes of a to-many change; never present in this module's changes.
    public static let indexesKey = NSKeyValueChangeKey("indexes")
    /// `true` in the change sent before a change, when `.prior` was asked for.
    public static let notificationIsPriorKey = NSKeyValueChangeKey("notificationIsPrior")
}

/// The kind of a change: Darwin's `NSKeyValueChange`. Every change this module reports is
/// a `.setting`.
public enum NSKeyValueChange: UInt, Sendable {
    /// The value was set: every change this module reports.
    case setting = 1
    /// Objects were inserted into a to-many relationship (not reported here).
    case insertion = 2
    /// Objects were removed from a to-many relationship (not reported here).
    case removal = 3
    /// Objects of a to-many relationship were replaced (not reported here).
    case replacement = 4
}

/// A change delivered to an `observe(_:options:changeHandler:)` handler.
public struct NSKeyValueObservedChange<Value> {
    /// The kind of a change.
    public typealias Kind = NSKeyValueChange
    /// Always `.setting` for the keys this module reports.
    public let kind: Kind
    /// The new value, when `.new` was asked for.
    public let newValue: Value?
    /// The old value, when `.old` was asked for.
    public let oldValue: Value?
    /// The indexes of a to-many change; always `nil` here.
    public let indexes: IndexSet?
    /// `true` for the change sent before a change (with `.prior`).
    public let isPrior: Bool

    init(new: Value?, old: Value?) {
        kind = .setting
        newValue = new
        oldValue = old
        indexes = nil
        isPrior = false
    }

    init(_ change: [NSKeyValueChangeKey: Any]) {
        kind = (change[.kindKey] as? UInt).flatMap(Kind.init(rawValue:)) ?? .setting
        newValue = change[.newKey] as? Value
        oldValue = change[.oldKey] as? Value
        indexes = nil
        isPrior = change[.notificationIsPriorKey] as? Bool ?? false
    }
}
#endif
