// A group whose children produce values of one type: the group delivers them.

@_spi(Engine) import Operations

/// A ``GroupOperation`` whose typed children's values it delivers, in the order the
/// children were added.
///
/// ```swift
/// let thumbnails = ValueGroupOperation(urls.map { url in AsyncBlockOperation { try await thumbnail(url) } })
/// queue.addOperation(thumbnails)
/// let images = try await thumbnails.values
/// ```
///
/// Every child that is a `ValueOperation<Element>` contributes its value, however it joined;
/// other children may join too and contribute none.
///
/// - Note: `@unchecked Sendable`: the typed children are in a `Locked`.
open class ValueGroupOperation<Element: Sendable>: GroupOperation, @unchecked Sendable {
    private let typedChildren = Locked<[ValueOperation<Element>]>([])

    /// Creates a group with `operations` as its first (typed) children.
    public init(_ operations: [ValueOperation<Element>] = [], failurePolicy: FailurePolicy = .finishAll) {
        super.init(failurePolicy: failurePolicy)
        for operation in operations { addChild(operation) }
    }

    /// Adds a typed child, whose value the group delivers (see
    /// ``GroupOperation/addChild(_:weight:)``).
    public func addChild(_ operation: ValueOperation<Element>, weight: Int64 = 1) {
        super.addChild(operation, weight: weight)
    }

    /// Every child that delivers an `Element` counts, however it joined (``addChild(_:weight:)``,
    /// `addChildren(_:)`, `produceOperation(_:)`, the group's queue).
    override func _childAdded(_ operation: Operation) {
        guard let typed = operation as? ValueOperation<Element> else { return }
        typedChildren.withLock { $0.append(typed) }
    }

    /// Adds a typed child (``addChild(_:weight:)-(ValueOperation<Element>,_)``).
    public func addOperation(_ operation: ValueOperation<Element>) {
        addChild(operation)
    }

    /// The values of the typed children that succeeded, in the order added, once the group
    /// has finished; the group's error when it failed or was cancelled. Nil until then.
    public var result: Result<[Element], any Error>? {
        guard let outcome else { return nil }
        switch outcome {
        case .succeeded:
            let children = typedChildren.withLock { $0 }
            return .success(children.compactMap { try? $0.result?.get() })
        case .failed(let error):
            return .failure(error)
        case .cancelled(let reason):
            return .failure(reason ?? CancellationError())
        }
    }

    /// Suspends until the group has finished; returns its children's values (see
    /// ``result``) or throws its error. Cancelling the awaiting task throws
    /// `CancellationError` and does not cancel the group.
    public var values: [Element] {
        get async throws {
            guard await _outcome() != nil else { throw CancellationError() }
            return try result!.get()
        }
    }
}
