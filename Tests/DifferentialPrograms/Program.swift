/// A small program over the Foundation-shaped API: one queue, a few operations, and the
/// steps a driver thread performs on them. The interpreter (compiled once against Linux's
/// Foundation and once against `Operations`) runs it and reports what a user can observe.
///
/// Programs are plain values: no operation classes appear here, so the generator, the
/// named programs and the test's filters need neither Foundation nor `Operations`.
public struct Program: Sendable, Equatable, Codable {
    /// `seed:N` for a generated program, `named:NAME` for one of ``NamedPrograms``.
    public var identifier: String
    public var queue: QueueSpec
    public var operations: [OperationSpec]
    public var steps: [Step]
    /// Whether the order in which operations start is defined (and so recorded): the queue
    /// is serial whenever it may run, and the driver changes nothing that decides the order
    /// while operations may be starting.
    public var startOrderIsDefined: Bool

    public init(
        identifier: String, queue: QueueSpec, operations: [OperationSpec], steps: [Step],
        startOrderIsDefined: Bool
    ) {
        self.identifier = identifier
        self.queue = queue
        self.operations = operations
        self.steps = steps
        self.startOrderIsDefined = startOrderIsDefined
    }
}

/// `Operation.QueuePriority`, by name.
public enum Priority: String, CaseIterable, Sendable, Codable {
    case veryLow, low, normal, high, veryHigh
}

/// `QualityOfService`, by name.
public enum ServiceQuality: String, CaseIterable, Sendable, Codable {
    case userInteractive, userInitiated, `default`, utility, background
}

/// How a subclass with its own state tells the world that `isExecuting`/`isFinished` changed.
public enum Announcement: String, Sendable, Codable {
    /// `willChangeValue(forKey: "isExecuting")` / `"isFinished"` and the matching `didChange`.
    case keys
    /// Only `"state"`, a key that `isExecuting` and `isFinished` depend on
    /// (`keyPathsForValuesAffectingValue(forKey:)`).
    case state
}

/// When a subclass with its own state finishes.
public enum Finish: String, Sendable, Codable {
    /// Before its `start()` returns (in `main()` for one that calls `super.start()`).
    case beforeStartReturns
    /// Later, from another thread, after `start()` returned.
    case later
}

/// The shapes of operation the programs use.
public enum OperationKind: Sendable, Equatable, Codable {
    /// `BlockOperation` with this many execution blocks.
    case block(blocks: Int)
    /// A subclass that overrides `main()` only.
    case plain
    /// A subclass that overrides `start()` (recording the call, then `super.start()`) and `main()`.
    case startLogging
    /// A subclass whose `isAsynchronous` is true but that overrides neither `start()` nor
    /// `isFinished`: its work is in `main()`, and it finishes when `main()` returns.
    case advisedAsynchronous
    /// Overrides `isExecuting`/`isFinished` with its own state; `start()` calls `super.start()`
    /// (then finishes itself when it was cancelled), `main()` does the work and finishes.
    case superStart(finish: Finish, announce: Announcement)
    /// Overrides `start()` without calling `super.start()`, and `isExecuting`/`isFinished`.
    case ownStart(finish: Finish, announce: Announcement)
    /// `queue.addOperation { … }`: a block the queue wraps; the program holds no reference.
    case queueBlock

    /// Whether the interpreter makes a subclass (which may override `isReady`).
    public var isSubclass: Bool {
        switch self {
        case .block, .queueBlock: false
        default: true
        }
    }

    /// Whether the class records calls of its `start()`.
    public var overridesStart: Bool {
        switch self {
        case .startLogging, .superStart, .ownStart: true
        default: false
        }
    }
}

/// What an operation's completion block does.
public enum Completion: String, Sendable, Codable {
    case none
    /// Records that it ran and what `isFinished`/`isCancelled` read.
    case record
    /// Records, then calls `waitUntilFinished()` of its own operation and records that it returned.
    case waitsForItsOperation
}

public struct OperationSpec: Sendable, Equatable, Codable {
    public var name: String
    public var kind: OperationKind
    public var priority: Priority?
    public var qualityOfService: ServiceQuality?
    /// Indices into ``Program/operations`` (never a `.queueBlock`); no cycles.
    public var dependencies: [Int]
    public var completion: Completion
    /// Overrides `isReady` as `super.isReady && gateIsOpen`; a ``Step/openGate(_:)`` opens it.
    public var readyGate: Bool
    /// Its work waits, once started, until a ``Step/cancelWhileRunning(_:)`` released it.
    public var holdsUntilReleased: Bool
    /// Its work calls `cancel()` on itself.
    public var cancelsItself: Bool
    /// Its work cancels these operations (each depends directly on this one).
    public var cancelsInWork: [Int]

    public init(
        name: String, kind: OperationKind, priority: Priority? = nil, qualityOfService: ServiceQuality? = nil,
        dependencies: [Int] = [], completion: Completion = .none, readyGate: Bool = false,
        holdsUntilReleased: Bool = false, cancelsItself: Bool = false, cancelsInWork: [Int] = []
    ) {
        self.name = name
        self.kind = kind
        self.priority = priority
        self.qualityOfService = qualityOfService
        self.dependencies = dependencies
        self.completion = completion
        self.readyGate = readyGate
        self.holdsUntilReleased = holdsUntilReleased
        self.cancelsItself = cancelsItself
        self.cancelsInWork = cancelsInWork
    }
}

public struct QueueSpec: Sendable, Equatable, Codable {
    /// An `OperationQueue` subclass whose `addOperation(_:)` records each call, then calls super.
    public var subclassOverridesAddOperation: Bool
    /// `-1` is `OperationQueue.defaultMaxConcurrentOperationCount`.
    public var maxConcurrentOperationCount: Int
    public var startsSuspended: Bool
    public var qualityOfService: ServiceQuality?

    public init(
        subclassOverridesAddOperation: Bool = false, maxConcurrentOperationCount: Int = -1,
        startsSuspended: Bool = false, qualityOfService: ServiceQuality? = nil
    ) {
        self.subclassOverridesAddOperation = subclassOverridesAddOperation
        self.maxConcurrentOperationCount = maxConcurrentOperationCount
        self.startsSuspended = startsSuspended
        self.qualityOfService = qualityOfService
    }
}

/// What the driver thread does, in order.
public enum Step: Sendable, Equatable, Codable {
    /// `queue.addOperation(op)`.
    case add(Int)
    /// `queue.addOperations([...], waitUntilFinished:)`.
    case addBatch([Int], waitUntilFinished: Bool)
    /// `queue.addOperation { … }` for a `.queueBlock` operation.
    case addBlock(Int)
    /// `queue.addBarrierBlock { … }`: records the barrier in the start order, and what
    /// `isFinished`/`isExecuting` of every other operation read.
    case addBarrier(Int)
    case setSuspended(Bool)
    case setMaxConcurrentOperationCount(Int)
    case cancel(Int)
    case cancelAllOperations
    case setPriority(Int, Priority)
    case setQualityOfService(Int, ServiceQuality)
    /// Opens the operation's ready gate and announces `isReady`.
    case openGate(Int)
    /// Waits until the holding operation's work started, cancels it, records what it reads,
    /// and releases it.
    case cancelWhileRunning(Int)
    case waitUntilFinished(Int)
    case waitUntilAllOperationsAreFinished
    /// Records `operationCount` and the names in `operations` (only where both are defined).
    case checkpoint
}
