import Operations
import OperationsComposition
import Testing

/// An operation's quality of service reaches the thread that runs it.
@Suite("Quality of service reaches the thread")
struct ThreadQualityOfServiceTests {
    /// Runs `operation` on `queue` and returns the thread's quality of service inside it.
    static func threadQuality(on queue: OperationQueue, operationQuality: QualityOfService?) -> QualityOfService? {
        let seen = Shared<QualityOfService?>(nil)
        let operation = BlockOperation { seen.update { $0 = Thread.current.qualityOfService } }
        if let operationQuality { operation.qualityOfService = operationQuality }
        queue.addOperation(operation)
        operation.waitUntilFinished()
        return seen()
    }

    @Test("its own quality of service when set, never below its queue's; the queue's when not set")
    func ownOrQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.qualityOfService = .utility
        #expect(Self.threadQuality(on: queue, operationQuality: .userInitiated) == .userInitiated)
        #expect(Self.threadQuality(on: queue, operationQuality: .background) == .utility, "below the queue's: the queue's")
        #expect(Self.threadQuality(on: queue, operationQuality: nil) == .utility)
    }

    @Test("a later change of the queue's quality of service reaches later operations")
    func queueChange() {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        #expect(Self.threadQuality(on: queue, operationQuality: nil) == .utility)
        queue.qualityOfService = .userInteractive
        #expect(Self.threadQuality(on: queue, operationQuality: nil) == .userInteractive)
    }
}
