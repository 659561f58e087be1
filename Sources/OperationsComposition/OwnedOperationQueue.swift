// Queues that belong to an operation: a group's children, a retry's attempts.

import Operations

extension Operation {
    /// " (a child of group "name")" when the operation is in a group's queue, for messages.
    var _groupClause: String {
        guard let group = (_queue as? GroupChildQueue)?.group else { return "" }
        return " (a child of \(group._misuseName))"
    }
}

/// A queue that belongs to an operation (a group's children, a retry's attempts): the
/// operations in it know their owner, so that a child's ``Operations/OperationExtensions/produceOperation(_:)``
/// joins its group and a child's categories are scoped to an owner holding them.
/// - Note: `@unchecked Sendable` (as its superclass): `owner` is set once in the owner's
///   `init`, before the queue is shared.
package class OwnedOperationQueue: OperationQueue, @unchecked Sendable {
    weak var owner: Operation?
}

/// The queue of a group's children. What is added to it by any other way than the group
/// (a child adding to `OperationQueue.current`: an operation, a block, a batch, an async
/// body) becomes a child of the group, which finishes after it.
/// - Note: `@unchecked Sendable`: see ``OwnedOperationQueue``.
package final class GroupChildQueue: OwnedOperationQueue, @unchecked Sendable {
    var group: GroupOperation? { owner as? GroupOperation }

    package override func addOperation(_ op: Operation) {
        guard let group, !group._isChild(op) else {
            super.addOperation(op)
            return
        }
        group.addChild(op)
    }

    package override func addOperations(_ ops: [Operation], waitUntilFinished wait: Bool) {
        guard group != nil else {
            super.addOperations(ops, waitUntilFinished: wait)
            return
        }
        for operation in ops { addOperation(operation) }
        if wait { for operation in ops { operation.waitUntilFinished() } }
    }
}
