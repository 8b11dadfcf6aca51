//! MIOpen's command log (`MIOPEN_ENABLE_LOGGING_CMD=1`): one MIOpenDriver command per
//! convolution call (`[LogCmdConvolution]`) or Find (`[LogCmdFindConvolution]`), with or without
//! the timestamp and process prefixes:
//! `MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver convfp16 -n 32 -c 64 -H 56 ...`.
//! Other commands (batch norm, pooling ...) and 3-D convolutions are counted as not supported.

use super::flags::Flags;
use super::problem::{Conv, Found, Parsed, square};
use crate::dtype::DType;

pub const FORMAT: &str = "MIOpen command log";

/// Reads one line; `None` when it is no MIOpen command.
pub fn line(text: &str) -> Option<Found> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let at = tokens
        .iter()
        .position(|t| t.trim_end_matches(".exe").ends_with("MIOpenDriver"))?;
    let find = text.contains("[LogCmdFind");
    let parsed = match tokens.get(at + 1) {
        None => Parsed::Malformed("MIOpenDriver without a command (truncated line?)".into()),
        Some(cmd) => command(cmd, &tokens[at + 2..], !find),
    };
    Some(Found::new(FORMAT, parsed))
}

fn command(cmd: &str, args: &[&str], executes: bool) -> Parsed {
    let dtype = match cmd {
        "conv" => DType::F32,
        "convfp16" => DType::F16,
        "convbfp16" => DType::Bf16,
        c if c.starts_with("conv") => {
            return Parsed::Unsupported(format!("MIOpen {c} (data type)"));
        }
        other => return Parsed::Unsupported(format!("MIOpen {other}")),
    };
    let flags = Flags::parse(args);
    match conv(&flags, dtype) {
        Ok(Ok(c)) => Parsed::Problem(c.problem(1.0, None, executes)),
        Ok(Err(why)) => Parsed::Unsupported(why),
        Err(why) => Parsed::Malformed(why),
    }
}

/// The convolution, or why rocsweep cannot run it (inner `Err`), or why the line cannot be read
/// (outer `Err`).
fn conv(f: &Flags, dtype: DType) -> Result<Result<Conv, String>, String> {
    let spatial = f.int(&["--spatial_dim", "-_"], Some(2))?;
    if spatial != 2 || f.has(&["-!", "--in_d"]) {
        return Ok(Err(format!("MIOpen {spatial}-D convolution")));
    }
    let mode = f.text(&["-m", "--mode"], Some("conv"))?;
    if mode != "conv" {
        return Ok(Err(format!("MIOpen convolution mode {mode} (transposed)")));
    }
    let layouts: Vec<&str> = ["--in_layout", "--fil_layout", "--out_layout"]
        .iter()
        .map(|l| f.text(&[l], Some("NCHW")))
        .collect::<Result<_, _>>()?;
    let nhwc = match (layouts[0], layouts[1], layouts[2]) {
        ("NCHW", "NCHW", "NCHW") => false,
        ("NHWC", "NHWC", "NHWC") => true,
        (i, w, o) => return Ok(Err(format!("MIOpen layouts {i}/{w}/{o}"))),
    };
    let pair = |h: &[&str], w: &[&str], d: i64| -> Result<(i64, i64), String> {
        Ok((f.int(h, Some(d))?, f.int(w, Some(d))?))
    };
    let (h, w) = (
        f.int(&["-H", "--in_h"], None)?,
        f.int(&["-W", "--in_w"], None)?,
    );
    let (n, c_in, c_out) = (
        f.int(&["-n", "--batchsize"], None)?,
        f.int(&["-c", "--in_channels"], None)?,
        f.int(&["-k", "--out_channels"], None)?,
    );
    let kernel = pair(&["-y", "--fil_h"], &["-x", "--fil_w"], 3)?;
    let pad = pair(&["-p", "--pad_h"], &["-q", "--pad_w"], 0)?;
    let stride = pair(&["-u", "--conv_stride_h"], &["-v", "--conv_stride_w"], 1)?;
    let dilation = pair(&["-l", "--dilation_h"], &["-j", "--dilation_w"], 1)?;
    let direction = match f.int(&["-F", "--forw"], None)? {
        1 => "fwd",
        2 => "bwd_data",
        4 => "bwd_weights",
        other => return Err(format!("-F {other} names no single direction (1, 2 or 4)")),
    };
    let c = Conv {
        direction,
        n,
        c_in,
        c_out,
        h,
        w,
        kernel: 0,
        pad: 0,
        stride: 0,
        dilation: 0,
        groups: f.int(&["-g", "--group_count"], Some(1))?,
        nhwc,
        dtype,
    };
    let squared = (|| {
        Ok(Conv {
            kernel: square("kernel", kernel)?,
            pad: square("padding", pad)?,
            stride: square("stride", stride)?,
            dilation: square("dilation", dilation)?,
            ..c
        })
    })();
    Ok(squared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::value::Value;

    fn problem(line_text: &str) -> super::super::problem::Problem {
        match line(line_text).map(|f| f.parsed) {
            Some(Parsed::Problem(p)) => p,
            other => panic!("{other:?}"),
        }
    }

    fn param<'a>(p: &'a super::super::problem::Problem, name: &str) -> &'a Value {
        &p.params.iter().find(|(n, _)| *n == name).expect("param").1
    }

    #[test]
    fn reads_a_logged_command_with_its_prefixes() {
        let p = problem(
            "[2024-05-01 10:00:00] MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver convbfp16 -n 32 -c 64 -H 56 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -m conv -g 2 -F 2 -t 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC",
        );
        assert_eq!(param(&p, "direction"), &Value::Str("bwd_data".into()));
        assert_eq!(param(&p, "w"), &Value::Int(28));
        assert_eq!(param(&p, "stride"), &Value::Int(2));
        assert_eq!(param(&p, "groups"), &Value::Int(2));
        assert_eq!(param(&p, "layout"), &Value::Str("nhwc".into()));
        assert_eq!(param(&p, "dtype"), &Value::Str("bf16".into()));
        assert!(p.executes);
    }

    #[test]
    fn find_lines_prepare_and_other_shapes_are_counted_not_guessed() {
        let find = problem(
            "MIOpen(HIP): Command [LogCmdFindConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
        );
        assert!(!find.executes);
        let kinds = [
            (
                "./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 1 -x 7 -p 0 -q 3 -F 1",
                "non-square kernel 1x7",
            ),
            (
                "./bin/MIOpenDriver conv --spatial_dim 3 -n 1 -c 3 -! 4 -H 8 -W 8 -k 4 -F 1",
                "3-D",
            ),
            (
                "./bin/MIOpenDriver convint8 -n 1 -c 3 -H 8 -W 8 -k 4 -F 1",
                "convint8",
            ),
            (
                "./bin/MIOpenDriver bnorm -n 1 -c 3 -H 8 -W 8",
                "MIOpen bnorm",
            ),
            (
                "./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -m trans -F 1",
                "transposed",
            ),
        ];
        for (text, why) in kinds {
            match line(text).map(|f| f.parsed) {
                Some(Parsed::Unsupported(r)) => assert!(r.contains(why), "{r} lacks {why}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_truncated_command_is_malformed_and_says_what_is_missing() {
        match line(
            "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 32 -c 64 -H",
        )
        .map(|f| f.parsed)
        {
            Some(Parsed::Malformed(why)) => assert_eq!(why, "-H has no value"),
            other => panic!("{other:?}"),
        }
        assert!(line("an unrelated line").is_none());
    }
}
