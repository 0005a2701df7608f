/* Field layout of the named tuples of arrays the Python side passes to the core.
 * Generated from natcoord's namedtuples (Tables, Buffers, PlanArrays, WorkBuffers,
 * FactorStore, Laws) in their field order; tests/test_core.py checks the names
 * (engine.layout()) and the kinds against them. A nested tuple's fields follow with the
 * nested name as prefix (its kinds in parentheses). Kinds: d float64, q int64, ? bool,
 * Z complex128, f a Python float. */
#ifndef NC_FIELDS_H
#define NC_FIELDS_H

enum {
    T_quad_row,
    T_quad_a,
    T_quad_b,
    T_quad_c,
    T_quad_w,
    T_quad_ga,
    T_quad_gb,
    T_lin_row,
    T_lin_a,
    T_lin_d,
    T_lin_w,
    T_lin_g,
    T_const_row,
    T_const_c,
    T_const_w,
    T_pattern_row,
    T_pattern_slot,
    T_J4,
    T_gravity_force,
    T_force_kind,
    T_force_index,
    T_aff_ptr,
    T_aff_slot,
    T_aff_coef,
    T_aff_const,
    T_pf_aff,
    T_pf_vec,
    T_tq_body,
    T_tq_vec,
    T_sp_a,
    T_sp_b,
    T_sp_k,
    T_sp_l0,
    T_sp_c,
    T_js_f0,
    T_js_f1,
    T_js_k,
    T_js_rest,
    T_js_c,
    T_cs_form,
    T_cs_k,
    T_cs_c,
    T_cs_rest,
    T_form_qptr,
    T_form_qa,
    T_form_qb,
    T_form_qc,
    T_form_lptr,
    T_form_la,
    T_form_ld,
    T_form_const,
    T_laws_weight_kind,
    T_laws_weight_law,
    T_laws_kind,
    T_laws_pieces,
    T_laws_order,
    T_laws_ptr,
    T_laws_data,
    T_size_factor,
    T_COUNT
};
#define NC_TABLES_KINDS "qqqdqqqqqdqqqdqqqddqqqqddqdqdqqdddqqdddqdddqqqdqqdd(qqqqqqd)f"
#define NC_TABLES_NAMES "quad_row,quad_a,quad_b,quad_c,quad_w,quad_ga,quad_gb,lin_row,lin_a,lin_d,lin_w,lin_g,const_row,const_c,const_w,pattern_row,pattern_slot,J4,gravity_force,force_kind,force_index,aff_ptr,aff_slot,aff_coef,aff_const,pf_aff,pf_vec,tq_body,tq_vec,sp_a,sp_b,sp_k,sp_l0,sp_c,js_f0,js_f1,js_k,js_rest,js_c,cs_form,cs_k,cs_c,cs_rest,form_qptr,form_qa,form_qb,form_qc,form_lptr,form_la,form_ld,form_const,laws_weight_kind,laws_weight_law,laws_kind,laws_pieces,laws_order,laws_ptr,laws_data,size_factor"

enum {
    S_g,
    S_g_t,
    S_gamma,
    S_Gv,
    S_G,
    S_F,
    S_s,
    S_x,
    S_lam,
    S_zero,
    S_K,
    S_Kacc,
    S_ystage,
    S_ynew,
    S_ynewacc,
    S_yproj,
    S_yprev,
    S_y,
    S_f,
    S_threshold,
    S_dropped,
    S_mask,
    S_rhs_mask,
    S_counts,
    S_ctrl,
    S_tmp,
    S_comb,
    S_stack,
    S_vals,
    S_held,
    S_COUNT
};
#define NC_BUFFERS_KINDS "ddddddddddddddddddddq??qdddqd?"
#define NC_BUFFERS_NAMES "g,g_t,gamma,Gv,G,F,s,x,lam,zero,K,Kacc,ystage,ynew,ynewacc,yproj,yprev,y,f,threshold,dropped,mask,rhs_mask,counts,ctrl,tmp,comb,stack,vals,held"

enum {
    P_J4,
    P_J4_min,
    P_unit_J4,
    P_unit_J4_min,
    P_mass_ratio,
    P_e_index,
    P_body_node,
    P_size,
    P_sign,
    P_col_ptr,
    P_col_node,
    P_upd_ptr,
    P_upd_q,
    P_upd_p,
    P_upd_t,
    P_node_row0,
    P_jp,
    P_jp_ptr,
    P_jp_row,
    P_jp_slot,
    P_jp_base,
    P_jp_stride,
    P_jp_axis,
    P_jp_z,
    P_body_axis_ptr,
    P_row_z,
    P_side_block,
    P_side_body,
    P_side_trans,
    P_side_row0,
    P_side_size,
    P_jp_e,
    P_al_block,
    P_al_trans,
    P_al_jnode,
    P_al_size,
    P_al_node,
    P_al_copy,
    P_al_rho,
    P_al_pair_u,
    P_al_pair_w,
    P_al_pair_t,
    P_COUNT
};
#define NC_PLAN_KINDS "ddddfqqqdqqqqqqqqqqqqqqqqqqqqqqqqqqqqqdqqq"
#define NC_PLAN_NAMES "J4,J4_min,unit_J4,unit_J4_min,mass_ratio,e_index,body_node,size,sign,col_ptr,col_node,upd_ptr,upd_q,upd_p,upd_t,node_row0,jp,jp_ptr,jp_row,jp_slot,jp_base,jp_stride,jp_axis,jp_z,body_axis_ptr,row_z,side_block,side_body,side_trans,side_row0,side_size,jp_e,al_block,al_trans,al_jnode,al_size,al_node,al_copy,al_rho,al_pair_u,al_pair_w,al_pair_t"

enum {
    WK_B,
    WK_inv,
    WK_E,
    WK_F,
    WK_Gj,
    WK_floor,
    WK_bound,
    WK_dropped,
    WK_decided,
    WK_I6,
    WK_y,
    WK_S3,
    WK_z,
    WK_ap,
    WK_COUNT
};
#define NC_WORK_KINDS "dddddddq?ddddd"
#define NC_WORK_NAMES "B,inv,E,F,Gj,floor,bound,dropped,decided,I6,y,S3,z,ap"

enum {
    FS_B,
    FS_inv,
    FS_E,
    FS_F,
    FS_Gj,
    FS_lam,
    FS_mask,
    FS_refactored,
    FS_COUNT
};
#define NC_STORE_KINDS "dddddd??"
#define NC_STORE_NAMES "B,inv,E,F,Gj,lam,mask,refactored"

enum {
    L_weight_kind,
    L_weight_law,
    L_kind,
    L_pieces,
    L_order,
    L_ptr,
    L_data,
    L_COUNT
};
#define NC_LAWS_KINDS "qqqqqqd"
#define NC_LAWS_NAMES "weight_kind,weight_law,kind,pieces,order,ptr,data"

#endif
