import Operations

let queue = OperationQueue()
let start = Date()
for index in 1...7 {
    queue.addOperation {
        Thread.sleep(forTimeInterval: 0.5)
        print("operation \(index) done")
    }
}
queue.waitUntilAllOperationsAreFinished()
print(String(format: "7 sleeps of 0.5 s took %.2f s", Date().timeIntervalSince(start)))
