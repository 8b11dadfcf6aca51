// The blocking kernel of launch-free timing (nvbench's method): it holds its stream until the
// host sets flag[0], so every call queued behind it is enqueued before the device starts any of
// them, and the events around those calls see device time only. If the host does not release it
// within `budget` clock cycles (a queued call waited for the device: a host-synchronous call, or
// a full launch queue), it sets flag[1] and returns, and the sample is refused.
extern "C" __global__ void rs_block(volatile unsigned int* flag, long long budget) {
  long long start = clock64();
  while (flag[0] == 0) {
    if (clock64() - start > budget) {
      flag[1] = 1;
      return;
    }
  }
}
