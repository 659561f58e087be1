// Sources/Operations/Operations.docc/MigratingFromFoundation.md

import Foundation
import class Operations.Operation
import class Operations.BlockOperation
import class Operations.OperationQueue

/// The scoped imports pick this module's classes over Foundation's.
func migratingFromFoundationScopedImports() -> Operations.OperationQueue {
    let queue = OperationQueue()
    queue.addOperation(BlockOperation {})
    return queue
}
