"""The safetensors dtype codes: their widths, the framework spellings TensorSpec takes, and the
order serialize stores them in (safetensors' Dtype enum: larger types later)."""

# code: bits per element, in safetensors' enum order
BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32,
        "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
ORDER = {code: i for i, code in enumerate(BITS)}

# The names torch and NumPy give their dtypes (str(torch.float32) without "torch.", np.dtype.name).
CODES = {"bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16", "int32": "I32",
         "uint32": "U32", "int64": "I64", "uint64": "U64", "float16": "F16", "float32": "F32", "float64": "F64",
         "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2": "F8_E5M2",
         "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0", "float4_e2m1fn_x2": "F4",
         "complex64": "C64"}
