//! The operation graph of one convolution in cuDNN's backend API: its tensors (dimensions and
//! strides per layout, the uids the variant pack names them by), the convolution descriptor and
//! the one forward, backward-data or backward-weights operation, finalized as a graph.

use super::descriptor::{Desc, Handle};
use crate::backend::UnitError;
use crate::backend::cuda::buffers::Gpu;
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, Direction, Layout};
use cudarc::cudnn::sys as s;

use s::cudnnBackendAttributeName_t as A;
use s::cudnnBackendAttributeType_t as T;
use s::cudnnBackendDescriptorType_t as D;

/// cudaMalloc'd buffers are 256-byte aligned; 16 is what cuDNN's vectorised kernels look for.
const ALIGNMENT: i64 = 16;

/// Dimensions and strides of one tensor, dimensions always in N, C, H, W order (the backend API
/// describes every layout by its strides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorShape {
    pub dims: [i64; 4],
    pub strides: [i64; 4],
}

impl TensorShape {
    /// A packed tensor of `dims` (n, c, h, w) stored in `layout` (NHWC filters are KRSC).
    pub fn packed(dims: [i64; 4], layout: Layout) -> TensorShape {
        let [_, c, h, w] = dims;
        let strides = match layout {
            Layout::Nchw => [c * h * w, h * w, w, 1],
            Layout::Nhwc => [h * w * c, 1, w * c, c],
        };
        TensorShape { dims, strides }
    }
}

/// The x, w and y tensors of a problem (y is dy and x is dx in the backward directions).
pub fn tensor_shapes(p: &Conv2d) -> [TensorShape; 3] {
    let g = &p.geom;
    let i = |v: usize| v as i64;
    [
        [i(g.n), i(g.c_in), i(g.h), i(g.w)],
        [i(g.c_out), i(g.c_in / g.groups.max(1)), i(g.kh), i(g.kw)],
        [i(g.n), i(g.c_out), i(g.out_h()), i(g.out_w())],
    ]
    .map(|dims| TensorShape::packed(dims, p.layout))
}

/// Unique ids of x, w and y in the graph and the variant pack.
const UID_X: i64 = 1;
const UID_W: i64 = 2;
const UID_Y: i64 = 3;

/// Which tensor uid each of the unit's buffers (a, b, out) is, per direction.
pub fn operand_uids(d: Direction) -> [i64; 3] {
    match d {
        Direction::Fwd => [UID_X, UID_W, UID_Y],
        Direction::BwdData => [UID_Y, UID_W, UID_X],
        Direction::BwdWeights => [UID_X, UID_Y, UID_W],
    }
}

/// Pre/post paddings, strides and dilations of the convolution descriptor, as (h, w) pairs.
pub fn conv_params(p: &Conv2d) -> [[i64; 2]; 4] {
    let g = &p.geom;
    let i = |v: usize| v as i64;
    [
        [i(g.pad_h), i(g.pad_w)],
        [i(g.pad_h), i(g.pad_w)],
        [i(g.stride_h), i(g.stride_w)],
        [i(g.dil_h), i(g.dil_w)],
    ]
}
fn data_type(d: DType) -> s::cudnnDataType_t {
    match d {
        DType::F16 => s::cudnnDataType_t::CUDNN_DATA_HALF,
        DType::Bf16 => s::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
        _ => s::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

/// The operation graph of one convolution, with the descriptors it was built from.
pub(super) struct OpGraph {
    pub(super) graph: Desc,
    _parts: Vec<Desc>,
    pub(super) dtype: DType,
    pub(super) handle: Handle,
}

/// A finalized tensor descriptor: `shape`, of `dtype` elements, known in the graph as `uid`.
fn tensor(uid: i64, shape: TensorShape, dtype: DType) -> Result<Desc, UnitError> {
    let t = Desc::new(D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    // SAFETY: CUDNN_TYPE_DATA_TYPE is cudnnDataType_t, a valid value of it.
    unsafe {
        t.set(
            A::CUDNN_ATTR_TENSOR_DATA_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[data_type(dtype)],
        )
    }?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_DIMENSIONS, &shape.dims)?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_STRIDES, &shape.strides)?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[ALIGNMENT])?;
    t.finalize("tensor")?;
    Ok(t)
}

/// The finalized convolution descriptor: cross-correlation with the problem's paddings, strides
/// and dilations.
fn convolution(p: &Conv2d) -> Result<Desc, UnitError> {
    let conv = Desc::new(D::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    // f32 accumulation for every dtype, as PyTorch asks for f16 and bf16.
    // SAFETY: CUDNN_TYPE_DATA_TYPE is cudnnDataType_t, a valid value of it.
    unsafe {
        conv.set(
            A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[s::cudnnDataType_t::CUDNN_DATA_FLOAT],
        )
    }?;
    conv.set_enum(
        A::CUDNN_ATTR_CONVOLUTION_CONV_MODE,
        T::CUDNN_TYPE_CONVOLUTION_MODE,
        s::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION as u32,
    )?;
    let [pre, post, stride, dil] = conv_params(p);
    conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &[2])?;
    conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, &pre)?;
    conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, &post)?;
    conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_DILATIONS, &dil)?;
    conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, &stride)?;
    conv.finalize("convolution")?;
    Ok(conv)
}

/// One direction's convolution operation: its descriptor type and the names of its attributes
/// (the x, w and y tensors are dx, dw and dy where the direction computes or consumes those).
struct OperationAttrs {
    ty: D,
    x: A,
    w: A,
    y: A,
    conv: A,
    alpha: A,
    beta: A,
}

fn operation_attrs(d: Direction) -> OperationAttrs {
    match d {
        Direction::Fwd => OperationAttrs {
            ty: D::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            x: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
            w: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
            y: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
            conv: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
            alpha: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
            beta: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
        },
        Direction::BwdData => OperationAttrs {
            ty: D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            x: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
            w: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
            y: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
            conv: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
            alpha: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
            beta: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
        },
        Direction::BwdWeights => OperationAttrs {
            ty: D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            x: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
            w: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
            y: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
            conv: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
            alpha: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
            beta: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
        },
    }
}

/// The finalized convolution operation of direction `d` over tensors x, w, y and `conv`
/// (alpha 1, beta 0: the output is overwritten).
fn operation(d: Direction, [x, w, y]: [&Desc; 3], conv: &Desc) -> Result<Desc, UnitError> {
    let names = operation_attrs(d);
    let op = Desc::new(names.ty)?;
    for (name, desc) in [(names.x, x), (names.w, w), (names.y, y), (names.conv, conv)] {
        op.set_descs(name, &[desc])?;
    }
    // SAFETY: CUDNN_TYPE_FLOAT is float (the scaling type of an f32-compute operation).
    unsafe {
        op.set(names.alpha, T::CUDNN_TYPE_FLOAT, &[1.0f32])?;
        op.set(names.beta, T::CUDNN_TYPE_FLOAT, &[0.0f32])?;
    }
    op.finalize("convolution operation")?;
    Ok(op)
}

impl OpGraph {
    /// The tensors, the convolution, its operation and the finalized graph of one operation.
    pub(super) fn new(gpu: &Gpu, p: &Conv2d) -> Result<OpGraph, UnitError> {
        let handle = Handle::new(gpu)?;
        let [xs, ws, ys] = tensor_shapes(p);
        let (x, w, y) = (
            tensor(UID_X, xs, p.dtype)?,
            tensor(UID_W, ws, p.dtype)?,
            tensor(UID_Y, ys, p.dtype)?,
        );
        let conv = convolution(p)?;
        let op = operation(p.direction, [&x, &w, &y], &conv)?;

        let graph = Desc::new(D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        graph.set_handle_if_known(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle.raw());
        graph.set_descs(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &[&op])?;
        graph.finalize("operation graph")?;
        Ok(OpGraph {
            graph,
            _parts: vec![op, conv, x, w, y],
            dtype: p.dtype,
            handle,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::conv::ConvGeom;

    fn problem(direction: Direction, layout: Layout, dtype: DType, groups: usize) -> Conv2d {
        Conv2d {
            direction,
            geom: ConvGeom {
                n: 2,
                c_in: 4,
                c_out: 6,
                h: 9,
                w: 7,
                kh: 3,
                kw: 3,
                pad_h: 1,
                pad_w: 1,
                stride_h: 2,
                stride_w: 2,
                dil_h: 1,
                dil_w: 1,
                groups,
            },
            layout,
            dtype,
        }
    }

    #[test]
    fn strides_describe_nchw_and_nhwc() {
        let nchw = TensorShape::packed([2, 3, 4, 5], Layout::Nchw);
        assert_eq!(nchw.strides, [60, 20, 5, 1]);
        let nhwc = TensorShape::packed([2, 3, 4, 5], Layout::Nhwc);
        assert_eq!(nhwc.dims, [2, 3, 4, 5]);
        assert_eq!(nhwc.strides, [60, 1, 15, 3]);
    }

    #[test]
    fn tensor_shapes_follow_the_geometry() {
        let p = problem(Direction::Fwd, Layout::Nhwc, DType::F16, 2);
        let [x, w, y] = tensor_shapes(&p);
        assert_eq!(x.dims, [2, 4, 9, 7]);
        // Grouped filter: c_in / groups input channels, stored KRSC in NHWC problems.
        assert_eq!(w.dims, [6, 2, 3, 3]);
        assert_eq!(w.strides, [18, 1, 6, 2]);
        // (9 + 2 - 3) / 2 + 1 = 5, (7 + 2 - 3) / 2 + 1 = 4
        assert_eq!(y.dims, [2, 6, 5, 4]);
        assert_eq!(y.strides, [120, 1, 24, 6]);
        // Packed: the largest stride times its extent is the element count.
        for t in [x, w, y] {
            assert_eq!(
                t.strides[0] * t.dims[0],
                t.dims.iter().product::<i64>(),
                "{t:?}"
            );
        }
        let nchw = problem(Direction::Fwd, Layout::Nchw, DType::F32, 1);
        assert_eq!(tensor_shapes(&nchw)[1].strides, [36, 9, 3, 1]);
        assert_eq!(
            conv_params(&nchw),
            [[1, 1], [1, 1], [2, 2], [1, 1]],
            "pre, post, stride, dilation"
        );
    }

    #[test]
    fn operands_map_to_tensors_per_direction() {
        // a, b, out: (x, w) -> y; (dy, w) -> dx; (x, dy) -> dw.
        assert_eq!(operand_uids(Direction::Fwd), [UID_X, UID_W, UID_Y]);
        assert_eq!(operand_uids(Direction::BwdData), [UID_Y, UID_W, UID_X]);
        assert_eq!(operand_uids(Direction::BwdWeights), [UID_X, UID_Y, UID_W]);
        let p = problem(Direction::BwdData, Layout::Nchw, DType::F32, 1);
        let lens = tensor_shapes(&p).map(|t| t.dims.iter().product::<i64>() as usize);
        // The output of bwd_data is x-shaped, as the op says.
        assert_eq!(lens[0], p.output_len());
    }
}
