// Sources/Operations/Operations.docc/GettingStarted.md

import Operations

func gettingStartedRunWork() {
let queue = OperationQueue()
queue.maxConcurrentOperationCount = 2

let download = BlockOperation { /* fetch */ }
let filter = BlockOperation { /* transform */ }
filter.addDependency(download)          // filter starts after download finished
filter.completionBlock = { print("done") }

queue.addOperations([filter, download], waitUntilFinished: false)
queue.waitUntilAllOperationsAreFinished()
}

final class Sum: Operation, @unchecked Sendable {
    let numbers: [Int]
    private(set) var result = 0
    init(_ numbers: [Int]) { self.numbers = numbers }
    override func main() {
        for n in numbers {
            if isCancelled { return }
            result += n
        }
    }
}
