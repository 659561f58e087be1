#if !canImport(ObjectiveC)
import Synchronization

/// Foundation's `Progress` with key-value observing, for Linux.
///
/// Linux's Foundation has no KVO. With `import Operations`, `Progress` names this subclass,
/// so that `progress.observe(\.fractionCompleted) { … }` and
/// `progress.addObserver(observer, forKeyPath: "fractionCompleted", …)` work as on Darwin:
/// `fractionCompleted`, `completedUnitCount`, `totalUnitCount`, `isCancelled`, `isPaused`,
/// `isFinished` and `isIndeterminate` are observable, and a child that is one of ours
/// (from `Progress(totalUnitCount:parent:pendingUnitCount:)`, `addChild(_:withPendingUnitCount:)`
/// or `becomeCurrent(withPendingUnitCount:)`) notifies the observers of its ancestors.
///
/// - Note: Unit counts and flags are thread-safe (Foundation's on Linux are not); building
///   the tree (`addChild`) is not synchronized with concurrent updates of that tree.
///   `Progress.current()` returns whatever was made current, typed as Foundation's class.
///   `@unchecked Sendable` (as Darwin's `Progress`): Foundation's unit counts are reached
///   only under `unitCounts`; the flags are atomics; the parent link is in a `Locked`.
open class Progress: Foundation.Progress, KeyValueObservable, @unchecked Sendable {
    /// Guards Foundation's unit counts of all our instances: a child's update writes its
    /// ancestors' fractions, so one lock covers a whole tree. Nothing but Foundation's own
    /// arithmetic runs under it.
    private static let unitCounts = Locked(())

    private let _observation = ObservationStorage()
    private let _cancelled = Atomic<Bool>(false)
    private let _paused = Atomic<Bool>(false)
    /// The parent this progress reports to, when that parent is one of ours.
    private let _parentLink = Locked(ParentLink())

    private struct ParentLink: Sendable {
        weak var parent: Progress?
    }

    public override init(parent parentProgress: Foundation.Progress?, userInfo: [ProgressUserInfoKey: Any]? = nil) {
        super.init(parent: parentProgress, userInfo: userInfo)
    }

    /// A progress with no parent; returns this class (Foundation's returns its own).
    open override class func discreteProgress(totalUnitCount unitCount: Int64) -> Progress {
        let progress = Progress(parent: nil)
        progress.totalUnitCount = unitCount
        return progress
    }

    // MARK: Observable state

    open override var completedUnitCount: Int64 {
        get { Progress.unitCounts.withLock { _ in super.completedUnitCount } }
        set { _changeUnitCounts("completedUnitCount") { super.completedUnitCount = newValue } }
    }

    open override var totalUnitCount: Int64 {
        get { Progress.unitCounts.withLock { _ in super.totalUnitCount } }
        set { _changeUnitCounts("totalUnitCount") { super.totalUnitCount = newValue } }
    }

    open override var isFinished: Bool {
        Progress.unitCounts.withLock { _ in super.isFinished }
    }

    open override var isIndeterminate: Bool {
        Progress.unitCounts.withLock { _ in super.isIndeterminate }
    }

    /// Set by `cancel()` on this progress or an ancestor.
    open override var isCancelled: Bool {
        get { _cancelled.load(ordering: .acquiring) }
        set {
            _announce(will: ["isCancelled"])
            _cancelled.store(newValue, ordering: .releasing)
            _announce(did: ["isCancelled"])
        }
    }

    open override var isPaused: Bool {
        get { _paused.load(ordering: .acquiring) }
        set {
            _announce(will: ["isPaused"])
            _paused.store(newValue, ordering: .releasing)
            _announce(did: ["isPaused"])
        }
    }

    /// Adds `inUnitCount` to ``completedUnitCount`` in one step (two threads adding at once
    /// both count), then notifies observers with no lock held. Used by `ProgressCounter`.
    package final func _incrementCompletedUnitCount(by inUnitCount: Int64) {
        _changeUnitCounts("completedUnitCount") { super.completedUnitCount += inUnitCount }
    }

    package final func _incrementTotalUnitCount(by inUnitCount: Int64) {
        _changeUnitCounts("totalUnitCount") { super.totalUnitCount += inUnitCount }
    }

    open override func addChild(_ child: Foundation.Progress, withPendingUnitCount inUnitCount: Int64) {
        (child as? Progress)?._parentLink.withLock { $0.parent = self }
        let chain = [self] + _ancestors()
        for progress in chain { progress._announce(will: Progress.keysChangedByChildren) }
        super.addChild(child, withPendingUnitCount: inUnitCount)
        for progress in chain.reversed() { progress._announce(did: Progress.keysChangedByChildren.reversed()) }
    }

    // MARK: Observing

    /// Registers `observer` to receive `observeValue(forKeyPath:of:change:context:)` for `keyPath`.
    /// - Note: The observer is not retained (as on Darwin).
    open func addObserver(
        _ observer: NSObject, forKeyPath keyPath: String, options: NSKeyValueObservingOptions = [],
        context: UnsafeMutableRawPointer?
    ) {
        _addObserver(observer, keyPath: keyPath, options: options, context: context)
    }

    /// Removes a registration made with the same observer, key path and context.
    open func removeObserver(_ observer: NSObject, forKeyPath keyPath: String, context: UnsafeMutableRawPointer?) {
        _removeObserver(observer, keyPath: keyPath, context: context, matchContext: true)
    }

    /// Removes the most recent registration made with the same observer and key path.
    open func removeObserver(_ observer: NSObject, forKeyPath keyPath: String) {
        _removeObserver(observer, keyPath: keyPath, context: nil, matchContext: false)
    }

    /// Announces that the value of `key` is about to change.
    open func willChangeValue(forKey key: String) {
        _observationRegistry?.willChange(self, key: key)
    }

    /// Announces that the value of `key` has changed.
    open func didChangeValue(forKey key: String) {
        _observationRegistry?.didChange(self, key: key)
    }

    final var _observationRegistry: ObservationRegistry? { _observation.registry }

    final func _makeObservationRegistry() -> ObservationRegistry { _observation.makeRegistry() }

    final func _keysTriggering(_ key: String) -> Set<String> { [ObservationKey.canonical(key)] }

    final func _observableValue(forKey key: String) -> Any? {
        switch key {
        case "fractionCompleted": Progress.unitCounts.withLock { _ in super.fractionCompleted }
        case "completedUnitCount": completedUnitCount
        case "totalUnitCount": totalUnitCount
        case "isCancelled": isCancelled
        case "isPaused": isPaused
        case "isFinished": isFinished
        case "isIndeterminate": isIndeterminate
        default: nil
        }
    }

    // MARK: Announcing

    /// What a child's change can change in each ancestor: its fraction, and when the child
    /// finishes, its completed count.
    private static let keysChangedByChildren = ["fractionCompleted", "completedUnitCount", "isFinished", "isIndeterminate"]

    /// Changes Foundation's unit counts under the lock, with the notifications of this
    /// progress and its ancestors before and after it, with no lock held.
    private func _changeUnitCounts(_ key: String, _ change: () -> Void) {
        // Held until after the lock: an ancestor finished by this change may be released.
        let ancestors = _ancestors()
        let ownKeys = [key, "fractionCompleted", "isFinished", "isIndeterminate"]
        _announce(will: ownKeys)
        for ancestor in ancestors { ancestor._announce(will: Progress.keysChangedByChildren) }
        Progress.unitCounts.withLock { _ in change() }
        for ancestor in ancestors.reversed() { ancestor._announce(did: Progress.keysChangedByChildren.reversed()) }
        _announce(did: ownKeys.reversed())
    }

    private func _ancestors() -> [Progress] {
        var ancestors: [Progress] = []
        var next = _parentLink.withLock { $0.parent }
        while let parent = next {
            ancestors.append(parent)
            next = parent._parentLink.withLock { $0.parent }
        }
        return ancestors
    }

    /// Cheap when nothing observes this progress.
    private func _announce(will keys: [String]) {
        guard let registry = _observationRegistry else { return }
        for key in keys { registry.willChange(self, key: key) }
    }

    private func _announce(did keys: [String]) {
        guard let registry = _observationRegistry else { return }
        for key in keys { registry.didChange(self, key: key) }
    }
}

/// Foundation's `ProgressReporting`, with this module's observable ``Progress``: what
/// `OperationQueue` conforms to, and what a client's reporting type conforms to with
/// `import Operations`.
public protocol ProgressReporting: Foundation.NSObjectProtocol {
    var progress: Progress { get }
}

extension Progress: KeyPathObservable {}

extension KeyPathObservable where Self: Progress {
    /// Observes a progress's `fractionCompleted`, `completedUnitCount`, `totalUnitCount`,
    /// `isCancelled`, `isPaused`, `isFinished` or `isIndeterminate`.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        _observe(keys: [Self._observableKey(keyPath)], options: options) { object, change in
            changeHandler(object as! Self, NSKeyValueObservedChange(change))
        }
    }

    private static func _observableKey(_ keyPath: AnyKeyPath) -> String {
        switch keyPath {
        case \Self.fractionCompleted: "fractionCompleted"
        case \Self.completedUnitCount: "completedUnitCount"
        case \Self.totalUnitCount: "totalUnitCount"
        case \Self.isCancelled: "isCancelled"
        case \Self.isPaused: "isPaused"
        case \Self.isFinished: "isFinished"
        case \Self.isIndeterminate: "isIndeterminate"
        default: Misuse.fail("key path \(keyPath) of \(Self.self) is not observable on this platform; observable keys: fractionCompleted, completedUnitCount, totalUnitCount, isCancelled, isPaused, isFinished, isIndeterminate")
        }
    }
}
#endif
