// Sources/Operations/Operations.docc/TestingWithXCTest.md: one import. (XCTest runs this
// test with the package's other XCTest cases.)

import OperationsXCTest

final class DownloadTests: XCTestCase {
    func testFilterRunsAfterDownload() {
        let queue = OperationQueue()            // Operations.OperationQueue
        let download = BlockOperation { }
        let filter = BlockOperation { }
        filter.addDependency(download)
        queue.addOperations([filter, download], waitUntilFinished: true)
        XCTAssertTrue(filter.isFinished)
    }
}
