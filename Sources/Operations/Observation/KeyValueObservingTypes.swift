#if !canImport(ObjectiveC)
// Linux's Foundation has no key-value observing. These are the option and change types of
// Darwin's KVO, with the same names, so that observer code compiles unchanged.

/// What an observation delivers: Darwin's `NSKeyValueObservingOptions`.
public struct NSKeyValueObservingOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let new = NSKeyValueObservingOptions(rawValue: 0x01)
    public static let old = NSKeyValueObservingOptions(rawValue: 0x02)
    public static let initial = NSKeyValueObservingOptions(rawValue: 0x04)
    public static let prior = NSKeyValueObservingOptions(rawValue: 0x08)
}

/// The keys of a change dictionary: Darwin's `NSKeyValueChangeKey`.
public struct NSKeyValueChangeKey: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let kindKey = NSKeyValueChangeKey("kind")
    public static let newKey = NSKeyValueChangeKey("new")
    public static let oldKey = NSKeyValueChangeKey("old")
    public static let indexesKey = NSKeyValueChangeKey("indexes")
    public static let notificationIsPriorKey = NSKeyValueChangeKey("notificationIsPrior")
}

/// The kind of a change: Darwin's `NSKeyValueChange`. Every change this module reports is
/// a `.setting`.
public enum NSKeyValueChange: UInt, Sendable {
    case setting = 1
    case insertion = 2
    case removal = 3
    case replacement = 4
}

/// A change delivered to an `observe(_:options:changeHandler:)` handler.
public struct NSKeyValueObservedChange<Value> {
    public typealias Kind = NSKeyValueChange
    public let kind: Kind
    public let newValue: Value?
    public let oldValue: Value?
    public let indexes: IndexSet?
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
