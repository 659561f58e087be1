/// Something waiting on a queue: a blocked thread or a hook (a suspended task).
enum QueueWaiter {
    case thread(DispatchSemaphore)
    case hook(id: UInt64, @Sendable () -> Void)

    func wake() {
        switch self {
        case .thread(let semaphore): semaphore.signal()
        case .hook(_, let hook): hook()
        }
    }

    func hasID(_ id: UInt64) -> Bool {
        if case .hook(id, _) = self { return true }
        return false
    }
}
