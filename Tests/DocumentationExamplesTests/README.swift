// The README's blocks. Each function holds a block; none is called.

import Operations

func readmeExample() async throws {
let queue = OperationQueue()
queue.maxConcurrentOperationCount = 2             // at most 2 at once

let load = BlockOperation { print("load") }
let output = BlockOperation { print("output") }
output.addDependency(load)                        // output runs after load
queue.addOperations([output, load], waitUntilFinished: false)

// An async body keeps its queue slot until it returns; cancel() cancels its task.
let answer = queue.addOperation {
    try await Task.sleep(for: .milliseconds(100))
    return 42
}
print(try await answer.value)                     // 42, or the failure rethrown
}
