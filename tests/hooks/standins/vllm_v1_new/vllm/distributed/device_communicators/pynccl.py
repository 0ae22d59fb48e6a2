"""Stand-in for vllm/distributed/device_communicators/pynccl.py: signatures of vLLM 0.9-0.11."""


class PyNcclCommunicator:
    def __init__(self, world_size=1):
        self.world_size = world_size
        self.rank = 0
        self.disabled = False

    def all_reduce(self, in_tensor, out_tensor=None, op=None, stream=None):
        return in_tensor

    def all_gather(self, output_tensor, input_tensor, stream=None):
        return output_tensor
